// A test_iter that reads past one pass over the test data: the solver says so, as a note when
// every record is scored equally often and as a warning when the score is biased.
#include <glog/logging.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "../data/data_test_helpers.hpp"
#include "doppio/solvers/solver_registry.hpp"
#include "test_util.hpp"

namespace doppio {
namespace {

struct Captured {
  google::LogSeverity severity;
  std::string text;
};

struct Sink : google::LogSink {
  std::vector<Captured> lines;
  void send(google::LogSeverity severity, const char*, const char*, int,
            const google::LogMessageTime&, const char* message, size_t length) override {
    lines.push_back({severity, std::string(message, length)});
  }
};

class RepeatedTestRecordsTest : public ::testing::Test {
 protected:
  // 10 records read in batches of 5: one pass is 2 batches.
  void SetUp() override {
    source_ = dir_.path() + "/records_lmdb";
    testing_data::WriteDatumLmdb(source_, testing_data::IndexedDatums(10));
  }

  std::vector<Captured> Build(int test_iter) {
    const std::string data = "type: 'Data' top: 'data' top: 'label' data_param { source: '" +
                             source_ + "' batch_size: 5 backend: LMDB } ";
    SolverParameter param = ParseText<SolverParameter>(
        "base_lr: 0.1 lr_policy: 'fixed' max_iter: 1 test_interval: 1 test_iter: " +
        std::to_string(test_iter) + " net_param { name: 'n' layer { name: 'train_data' " + data +
        "include { phase: TRAIN } } layer { name: 'test_data' " + data +
        "include { phase: TEST } } layer { name: 'ip' type: 'InnerProduct' bottom: 'data' top: "
        "'ip' inner_product_param { num_output: 3 } } layer { name: 'loss' type: "
        "'SoftmaxWithLoss' bottom: 'ip' bottom: 'label' top: 'loss' } }");
    Sink sink;
    google::AddLogSink(&sink);
    const int old_level = FLAGS_minloglevel;
    FLAGS_minloglevel = google::INFO;
    SolverRegistry<float>::CreateSolver(param);
    FLAGS_minloglevel = old_level;
    google::RemoveLogSink(&sink);
    std::vector<Captured> notes;
    for (const Captured& line : sink.lines) {
      if (line.text.rfind("Test net #0 runs", 0) == 0) notes.push_back(line);
    }
    return notes;
  }

  TempDir dir_;
  std::string source_;
};

TEST_F(RepeatedTestRecordsTest, OnePassOrLessSaysNothing) {
  EXPECT_TRUE(Build(1).empty());
  EXPECT_TRUE(Build(2).empty());
}

TEST_F(RepeatedTestRecordsTest, WholePassesAreANote) {
  const std::vector<Captured> notes = Build(6);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0].severity, google::GLOG_INFO);
  EXPECT_CONTAINS(notes[0].text, "layer 'test_data' takes 2");
  EXPECT_CONTAINS(notes[0].text, "every record is scored 3 times");
}

TEST_F(RepeatedTestRecordsTest, PartialPassesAreAWarning) {
  const std::vector<Captured> notes = Build(3);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0].severity, google::GLOG_WARNING);
  EXPECT_CONTAINS(notes[0].text, "biases the score; make test_iter a multiple of 2");
}

}  // namespace
}  // namespace doppio
