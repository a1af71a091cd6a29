#include "thread_budget.hpp"

#include <glog/logging.h>
#include <sched.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <thread>
#include <utility>

#include "doppio/util/error.hpp"
#include "doppio/util/math_functions.hpp"
#include "slurm_job.hpp"

namespace doppio {

LocalRanks LocalRanksFromLauncher() {
  LocalRanks local;
  const std::pair<const char*, const char*> launchers[] = {
      {"OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"},
      {"MV2_COMM_WORLD_LOCAL_RANK", "MV2_COMM_WORLD_LOCAL_SIZE"},
      {"MPI_LOCALRANKID", "MPI_LOCALNRANKS"},
      {"SLURM_LOCALID", "SLURM_NTASKS_PER_NODE"}};
  for (const auto& names : launchers) {
    const char* rank = std::getenv(names.first);
    if (rank == nullptr) continue;
    local.rank = std::max(0, std::atoi(rank));
    const char* size = std::getenv(names.second);
    int ranks = size != nullptr ? std::atoi(size) : 0;
    // srun sets SLURM_NTASKS_PER_NODE only when the job asked for --ntasks-per-node; the
    // count of this node's tasks is always in SLURM_TASKS_PER_NODE.
    const char* slurm_tasks = std::getenv("SLURM_TASKS_PER_NODE");
    const char* slurm_node = std::getenv("SLURM_NODEID");
    if (ranks <= 0 && std::string(names.first) == "SLURM_LOCALID" && slurm_tasks != nullptr &&
        slurm_node != nullptr) {
      ranks = SlurmTasksOnNode(slurm_tasks, std::atoi(slurm_node));
    }
    local.size = std::max(local.rank + 1, ranks);
    break;
  }
  return local;
}

int UsableCores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

ThreadBudget::ThreadBudget(int requested, const LocalRanks& local) {
  const int cores = UsableCores();
  const char* omp = std::getenv("OMP_NUM_THREADS");
  if (requested > 0) {
    threads_ = requested;
    source_ = "--threads";
  } else if (omp != nullptr && std::atoi(omp) >= 1) {
    threads_ = std::atoi(omp);
    source_ = "OMP_NUM_THREADS";
  } else {
    threads_ = std::max(1, cores / std::max(1, local.size));
    source_ = std::to_string(cores) + " core" + (cores > 1 ? "s" : "") + " for " +
              std::to_string(local.size) + " rank" + (local.size > 1 ? "s" : "") + " on this node";
  }
  if (threads_ * local.size > cores) {
    LOG(WARNING) << threads_ << " threads per rank (" << source_ << ") x " << local.size
                 << " rank(s) on this node is more than the " << cores
                 << " cores this process may use: threads will wait for each other";
  }
  pool_ = std::make_unique<ThreadPool>(threads_);
  scope_ = std::make_unique<ThreadPool::Scope>(pool_.get());
  SetBlasThreads(1);
  LOG(INFO) << "CPU threads: " << threads_ << " (" << source_ << ")";
}

}  // namespace doppio
