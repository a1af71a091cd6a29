// OpenMP's wait policy for a doppio command (tools/lib/wait_policy.hpp): spinning on a quiet
// machine, sleeping where other tasks run or the load is unknown, from /proc/stat's
// procs_running.
#include "wait_policy.hpp"

#include <gtest/gtest.h>

namespace doppio {
namespace {

TEST(WaitPolicyTest, SpinsOnlyWhereNothingElseRuns) {
  EXPECT_EQ(ChooseWaitPolicy(0, 1).policy, "ACTIVE");
  const WaitPolicyChoice busy = ChooseWaitPolicy(2, 1);
  EXPECT_EQ(busy.policy, "PASSIVE");
  EXPECT_NE(busy.reason.find("2 other tasks were running"), std::string::npos) << busy.reason;
  EXPECT_EQ(ChooseWaitPolicy(1, 1).reason, "1 other task was running when the command started");
  EXPECT_EQ(ChooseWaitPolicy(-1, 1).policy, "PASSIVE");
}

TEST(WaitPolicyTest, RanksOfOneJobSleep) {
  const WaitPolicyChoice rank = ChooseWaitPolicy(0, 4);
  EXPECT_EQ(rank.policy, "PASSIVE");
  EXPECT_NE(rank.reason.find("one of 4 ranks"), std::string::npos) << rank.reason;
}

TEST(WaitPolicyTest, ReadsProcsRunning) {
  EXPECT_EQ(ProcsRunning("cpu  1 2 3\nctxt 99\nprocs_running 3\nprocs_blocked 0\n"), 3);
  EXPECT_EQ(ProcsRunning("cpu  1 2 3\nprocs_blocked 0\n"), -1);
  EXPECT_EQ(ProcsRunning("procs_running x\n"), -1);
}

TEST(WaitPolicyTest, TheCallerIsNotAnotherTask) {
  // This test runs, so procs_running counts it: never a negative count of others.
  EXPECT_GE(OtherRunnableTasks(), 0);
}

}  // namespace
}  // namespace doppio
