#include "thread_budget.hpp"

#include <glog/logging.h>
#include <sched.h>

#include <algorithm>
#include <cstdlib>
#include <thread>

#include "doppio/util/error.hpp"
#include "doppio/util/math_functions.hpp"

namespace doppio {

int UsableCores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

ThreadBudget::ThreadBudget(const LocalRanks& local) {
  const int cores = UsableCores();
  const char* omp = std::getenv("OMP_NUM_THREADS");
  if (!gflags::GetCommandLineFlagInfoOrDie("threads").is_default) {
    DOPPIO_ENSURE(FLAGS_threads >= 1)
        << "--threads must be at least 1, not " << FLAGS_threads << " (leave it out for the "
        << "cores this process may use shared among its node's ranks)";
    threads_ = FLAGS_threads;
    source_ = "--threads";
  } else if (omp != nullptr && std::atoi(omp) >= 1) {
    threads_ = std::atoi(omp);
    source_ = "OMP_NUM_THREADS";
  } else {
    threads_ = std::max(1, cores / std::max(1, local.size));
    source_ = std::to_string(cores) + " core" + (cores > 1 ? "s" : "") + " for " +
              std::to_string(local.size) + " rank" + (local.size > 1 ? "s" : "") +
              " on this node";
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
