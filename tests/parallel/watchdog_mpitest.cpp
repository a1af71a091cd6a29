// The watchdog as an MPI job of two ranks: rank 1 does not issue the collective that rank 0
// waits in, so rank 0's watchdog must end the job with a message naming rank 1 and where it
// is. The job fails by design; ctest looks for that message (tests/parallel/CMakeLists.txt).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <thread>

#include "mpi_test_util.hpp"

namespace doppio {
namespace {

using mpi_test::World;

TEST(MpiWatchdogTest, AbortsNamingTheRankThatDidNotArrive) {
  auto comm = World();
  if (comm->size() < 2) GTEST_SKIP() << "needs a second rank that stays away";
  comm->set_timeout(1);
  comm->Barrier("all here");
  if (comm->rank() == 0) {
    std::int32_t value = 0;
    comm->Allreduce(&value, 1, CommType::kInt32, ReduceOp::kSum, "only rank 0");
  } else {
    // Its communication thread still answers rank 0's watchdog meanwhile.
    std::this_thread::sleep_for(std::chrono::seconds(30));
  }
  ADD_FAILURE() << "the watchdog did not end the job";
}

}  // namespace
}  // namespace doppio
