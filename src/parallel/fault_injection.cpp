#include "doppio/parallel/fault_injection.hpp"

#include <glog/logging.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <sstream>
#include <thread>

#include "doppio/util/error.hpp"

namespace doppio {

void FaultInjection::MaybeFail(int rank_here, int iter_here) const {
  // "nan" is not a failure of the rank: DistributedSolver poisons its data instead.
  if (!active() || rank != rank_here || iter != iter_here || mode == "nan") return;
  std::ostringstream what;
  what << "fault injection (DOPPIO_FAIL_RANK=" << rank << " DOPPIO_FAIL_ITER=" << iter
       << " DOPPIO_FAIL_MODE=" << mode << "): rank " << rank << " fails at iteration " << iter;
  if (mode == "error") throw Error(what.str());
  LOG(ERROR) << what.str();
  google::FlushLogFiles(google::GLOG_INFO);
  if (mode == "crash") std::raise(SIGSEGV);
  if (mode == "exit") std::_Exit(3);
  while (true) std::this_thread::sleep_for(std::chrono::seconds(1));
}

}  // namespace doppio
