// The agreement helpers that need no MPI job: which ranks differ from rank 0, and the
// deferral of stop and snapshot requests polled between iterations.
#include "doppio/parallel/agreement.hpp"

#include <gtest/gtest.h>

#include "doppio/parallel/communicator.hpp"

namespace doppio {
namespace {

TEST(AgreementTest, NamesTheRanksThatDifferFromRankZero) {
  EXPECT_TRUE(RanksDifferingFromRankZero({7, 7, 7}).empty());
  EXPECT_EQ(RanksDifferingFromRankZero({7, 8, 7, 9}), (std::vector<int>{1, 3}));
  // Three values a rank: the second of each is compared.
  const std::vector<std::uint64_t> all = {1, 2, 3, 1, 5, 3, 1, 2, 4};
  EXPECT_EQ(RanksDifferingFromRankZero(all, 3, 1), std::vector<int>{1});
  EXPECT_EQ(RanksDifferingFromRankZero(all, 3, 2), std::vector<int>{2});
  EXPECT_TRUE(RanksDifferingFromRankZero(all, 3, 0).empty());
  EXPECT_EQ(RankList({2}), "rank 2");
  EXPECT_EQ(RankList({1, 3}), "ranks 1, 3");
  EXPECT_EQ(Hex(0xabc), "0000000000000abc");
}

TEST(AgreementTest, RequestsBetweenIterationsWaitForTheEndOfOne) {
  SelfCommunicator comm;
  ActionAgreement agreement;
  // Polled between test batches: kept, not acted on.
  EXPECT_EQ(agreement.Agree(comm, SolverAction::SNAPSHOT), SolverAction::NONE);
  EXPECT_EQ(agreement.Agree(comm, SolverAction::NONE), SolverAction::NONE);
  agreement.EndIteration();
  EXPECT_EQ(agreement.Agree(comm, SolverAction::NONE), SolverAction::SNAPSHOT);
  agreement.EndIteration();
  EXPECT_EQ(agreement.Agree(comm, SolverAction::NONE), SolverAction::NONE);
  EXPECT_EQ(agreement.Agree(comm, SolverAction::STOP), SolverAction::NONE);
  agreement.EndIteration();
  EXPECT_EQ(agreement.Agree(comm, SolverAction::NONE), SolverAction::STOP);
}

TEST(AgreementTest, AStopAndASnapshotThatMeetAreBothKept) {
  using A = SolverAction;
  const A all[] = {A::NONE, A::STOP, A::SNAPSHOT, A::SNAPSHOT_AND_STOP};
  for (const A a : all) {
    for (const A b : all) {
      const A both = CombineActions(a, b);
      EXPECT_EQ(Stops(both), Stops(a) || Stops(b));
      EXPECT_EQ(Snapshots(both), Snapshots(a) || Snapshots(b));
      EXPECT_EQ(both, CombineActions(b, a));
    }
  }
  EXPECT_EQ(CombineActions(A::SNAPSHOT, A::STOP), A::SNAPSHOT_AND_STOP);
  EXPECT_EQ(CombineActions(A::NONE, A::STOP), A::STOP);

  // A stop polled between test batches is not overridden by a snapshot at the iteration's end.
  SelfCommunicator comm;
  ActionAgreement agreement;
  EXPECT_EQ(agreement.Agree(comm, A::STOP), A::NONE);
  EXPECT_EQ(agreement.Agree(comm, A::SNAPSHOT), A::NONE);
  agreement.EndIteration();
  EXPECT_EQ(agreement.Agree(comm, A::NONE), A::SNAPSHOT_AND_STOP);
  EXPECT_TRUE(agreement.snapshot_agreed());
  agreement.EndIteration();
  EXPECT_EQ(agreement.Agree(comm, A::STOP), A::STOP);
  EXPECT_FALSE(agreement.snapshot_agreed());
}

TEST(AgreementTest, OneRankThrowsItsOwnMessage) {
  SelfCommunicator comm;
  EXPECT_NO_THROW(AgreeOnFailure(comm, true, "", "start"));
  try {
    AgreeOnFailure(comm, false, "bad flag", "start");
    ADD_FAILURE() << "no AgreedError";
  } catch (const AgreedError& error) {
    EXPECT_STREQ(error.what(), "bad flag");
    EXPECT_EQ(error.code(), ExitCode::kUserError);
  }
  // The failure's exit code travels with it.
  try {
    AgreeOnFailure(comm, false, "diverged", "train", ExitCode::kDiverged);
    ADD_FAILURE() << "no AgreedError";
  } catch (const AgreedError& error) {
    EXPECT_EQ(error.code(), ExitCode::kDiverged);
  }
}

}  // namespace
}  // namespace doppio
