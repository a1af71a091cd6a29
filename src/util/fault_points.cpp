#include "doppio/util/fault_points.hpp"

#include <glog/logging.h>

#include <atomic>

namespace doppio {

namespace {

std::atomic<const FaultPoints*> installed{nullptr};

}  // namespace

void InstallFaultPoints(const FaultPoints* points) {
  const FaultPoints* none = nullptr;
  CHECK(points != nullptr);
  CHECK(installed.compare_exchange_strong(none, points)) << "fault points are installed once";
}

const FaultPoints* InstalledFaultPoints() { return installed.load(); }

}  // namespace doppio
