// main() of an MPI test job: every rank runs the same tests in the same order. Rank 0 prints
// gtest's usual report; the other ranks print only their failures, each line naming the
// rank. The exit code is the worst of all ranks', so mpiexec fails when any rank fails.
#include <glog/logging.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "doppio/parallel/rank_logging.hpp"
#include "doppio/util/math_functions.hpp"
#include "mpi_test_util.hpp"

namespace doppio {
namespace mpi_test {

namespace {
std::shared_ptr<MpiCommunicator> g_world;

class RankFailurePrinter : public ::testing::EmptyTestEventListener {
 public:
  explicit RankFailurePrinter(int rank) : rank_(rank) {}
  // (UnitTest::current_test_info would deadlock inside OnTestPartResult.)
  void OnTestStart(const ::testing::TestInfo& test) override {
    test_ = std::string(test.test_suite_name()) + "." + test.name();
  }
  void OnTestPartResult(const ::testing::TestPartResult& result) override {
    if (!result.failed()) return;
    std::fprintf(stderr, "[rank %d] FAILURE in %s at %s:%d\n%s\n", rank_, test_.c_str(),
                 result.file_name() ? result.file_name() : "?", result.line_number(),
                 result.message());
  }

 private:
  int rank_;
  std::string test_;
};
}  // namespace

std::shared_ptr<MpiCommunicator> World() { return g_world; }

SharedTempDir::SharedTempDir() {
  if (World()->rank() == 0) {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "doppio_mpitest_XXXXXX").string();
    const char* made = mkdtemp(pattern.data());
    EXPECT_NE(made, nullptr);
    path_ = pattern;
  }
  World()->BroadcastBytes(&path_, 0, "temp dir");
}

SharedTempDir::~SharedTempDir() {
  World()->Barrier("temp dir removal");
  if (World()->rank() == 0) {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
}

}  // namespace mpi_test
}  // namespace doppio

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  google::InitGoogleLogging(argv[0]);
  FLAGS_logtostderr = true;
  FLAGS_minloglevel = google::WARNING;
  doppio::SetBlasThreads(1);
  auto world = std::make_shared<doppio::MpiCommunicator>();
  // A test that leaves a collective unmatched aborts the job instead of hanging it.
  world->set_timeout(60);
  doppio::mpi_test::g_world = world;
  doppio::SetUpRankLogging(world->rank(), world->size());
  auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
  if (world->rank() != 0) {
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new doppio::mpi_test::RankFailurePrinter(world->rank()));
  }
  std::int32_t result = RUN_ALL_TESTS();
  world->Allreduce(&result, 1, doppio::CommType::kInt32, doppio::ReduceOp::kMax, "test result");
  doppio::mpi_test::g_world.reset();
  world.reset();
  return result;
}
