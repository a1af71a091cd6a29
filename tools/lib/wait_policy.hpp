#pragma once

#include <string>

namespace doppio {

// OpenMP's wait policy for a doppio command, chosen before OpenMP starts (libgomp reads
// OMP_WAIT_POLICY once, when it is loaded, so `doppio` starts itself again with it set).
// Measured with `doppio train` on CIFAR10-quick, 2 cores (bench/README.md): on a quiet machine
// threads that spin while they wait (ACTIVE) ran 30.6 iter/s against 25.3 sleeping (PASSIVE);
// with another process keeping one core busy, 10.9 spinning against 14.7 sleeping. So the
// policy follows what the machine is doing when the command starts: ACTIVE for a process of
// its own (not one rank of several) where no other task is runnable, PASSIVE otherwise. The
// ranks of one job may share a machine's cores (`mpirun --oversubscribe`, the namespace
// cluster), where a spinning thread would take a core from another rank; two ranks of one
// core each ran as fast either way (bench/README.md). Either policy gives the same results.
struct WaitPolicyChoice {
  std::string policy;  // "ACTIVE" or "PASSIVE"
  std::string reason;  // for the log
};
// `others`: OtherRunnableTasks(), below 0 where unknown (PASSIVE, the safe side); `ranks`:
// JobRanks().
WaitPolicyChoice ChooseWaitPolicy(int others, int ranks);

// The ranks of the job this process belongs to, from the launcher's environment (Open MPI,
// MPICH's PMI, MVAPICH, Slurm's srun); 1 when no launcher started it.
int JobRanks();

// The runnable tasks of the machine besides this process's threads: the fewest /proc/stat's
// procs_running showed over a few samples 10 ms apart (a task that runs for a moment is no
// load), at least 0; -1 where /proc/stat cannot be read.
int OtherRunnableTasks();
// procs_running from the text of /proc/stat; -1 where it has none.
int ProcsRunning(const std::string& proc_stat);

}  // namespace doppio
