#pragma once

#include <memory>
#include <string>

#include "doppio/util/thread_pool.hpp"

namespace doppio {

// This process's rank among the ranks of its node and their number, from the MPI
// launcher's environment (0 of 1 when not started by one).
struct LocalRanks {
  int rank = 0;
  int size = 1;
};
LocalRanks LocalRanksFromLauncher();

// The CPU threads of one doppio process (docs/cpu.md, "Threads"), made once, before any work,
// for every command, and of a Python process that imports doppio. Doppio's pool gets that many
// threads and becomes the current pool of the calling thread, which runs the nets; in a build with
// oneDNN the pool runs on OpenMP's threads, oneDNN's own, so the two are one set of threads;
// OpenBLAS runs single-threaded inside the pool's parts. So no second set of threads spins beside
// the one that works (a threaded OpenBLAS beside oneDNN's OpenMP made `doppio train` on LeNet 3x
// slower on two cores, bench/README.md).
class ThreadBudget {
 public:
  // `requested` threads (--threads) when > 0; else OMP_NUM_THREADS when set; else the cores
  // this process may run on (its affinity mask) shared among the ranks on its node, at least
  // 1. A warning for more threads than those cores.
  ThreadBudget(int requested, const LocalRanks& local);
  ThreadBudget(const ThreadBudget&) = delete;
  ThreadBudget& operator=(const ThreadBudget&) = delete;

  int threads() const { return threads_; }
  // Where the number came from, for the log ("--threads", "8 cores for 2 ranks on this node").
  const std::string& source() const { return source_; }

 private:
  int threads_ = 1;
  std::string source_;
  std::unique_ptr<ThreadPool> pool_;
  std::unique_ptr<ThreadPool::Scope> scope_;
};

// The cores the calling process may run on (its CPU affinity), at least 1.
int UsableCores();

}  // namespace doppio
