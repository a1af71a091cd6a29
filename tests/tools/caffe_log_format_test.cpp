// A real `doppio train` log read by Caffe's parse_log logic (tests/tools/caffe_parse_log.py,
// written from its documented line format): Caffe's glog prefix by default, so the tables
// come out whole; glog's year in the prefix (--log_year_in_prefix) breaks that parser, as it
// did before the default changed.
#include <gtest/gtest.h>

#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "cli_test_util.hpp"
#include "test_util.hpp"

namespace doppio {
namespace {

using namespace cli_test;

const char* kNet = R"(
name: "logged"
layer { name: "data" type: "DummyData" top: "x" top: "y"
        dummy_data_param { shape { dim: 8 dim: 3 } shape { dim: 8 dim: 1 }
                           data_filler { type: "gaussian" std: 1 } } }
layer { name: "ip" type: "InnerProduct" bottom: "x" top: "out"
        inner_product_param { num_output: 1 weight_filler { type: "gaussian" std: 0.5 } } }
layer { name: "loss" type: "EuclideanLoss" bottom: "out" bottom: "y" top: "loss" }
)";

const std::string kParser = SourceDir() + "/tests/tools/caffe_parse_log.py";

// A CSV table: the header's column names, then the rows.
struct Table {
  std::vector<std::string> columns;
  std::vector<std::vector<double>> rows;
  int Column(const std::string& name) const {
    for (std::size_t i = 0; i < columns.size(); ++i) {
      if (columns[i] == name) return static_cast<int>(i);
    }
    return -1;
  }
};

Table ReadCsv(const std::string& path) {
  Table table;
  std::istringstream lines(ReadText(path));
  std::string line;
  for (bool header = true; std::getline(lines, line); header = false) {
    std::istringstream cells(line);
    std::string cell;
    std::vector<double> row;
    while (std::getline(cells, cell, ',')) {
      if (header) {
        table.columns.push_back(cell);
      } else {
        row.push_back(std::stod(cell));
      }
    }
    if (!header) table.rows.push_back(row);
  }
  return table;
}

class CaffeLogFormatTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(std::filesystem::exists(DoppioBinary())) << DoppioBinary() << " is missing";
    WriteText(Path("net.prototxt"), kNet);
    WriteText(Path("solver.prototxt"), "net: '" + Path("net.prototxt") +
                                           "'\n"
                                           "test_iter: 2 test_interval: 10 base_lr: 0.01 "
                                           "lr_policy: 'step' gamma: 0.5 stepsize: 10 "
                                           "max_iter: 30 display: 5 random_seed: 1 "
                                           "solver_mode: CPU\n");
  }
  std::string Path(const std::string& name) const { return dir_.path() + "/" + name; }
  Result Train(const std::string& log, const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args = {"train", "--solver=" + Path("solver.prototxt")};
    args.insert(args.end(), extra.begin(), extra.end());
    return RunDoppio(args, Path(log));
  }
  Result Parse(const std::string& log) {
    return RunShell("python3 " + kParser + " " + Path(log) + " " + dir_.path());
  }
  TempDir dir_;
};

TEST_F(CaffeLogFormatTest, CaffesParserReadsATrainingLog) {
  const Result run = Train("train.log");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  // glog's default prefix as Caffe's logs have it: no year.
  EXPECT_TRUE(std::regex_search(run.output, std::regex("\nI[0-9]{4} [0-9:.]{15} +[0-9]+ ")))
      << run.output;
  const Result parsed = Parse("train.log");
  ASSERT_EQ(parsed.exit_code, 0) << parsed.output << "\n" << run.output;

  const Table train = ReadCsv(Path("train.log.train"));
  ASSERT_EQ(train.columns.size(), 4u) << ReadText(Path("train.log.train"));
  EXPECT_EQ(train.columns[0], "NumIters");
  EXPECT_EQ(train.columns[1], "Seconds");
  EXPECT_EQ(train.columns[2], "LearningRate");
  EXPECT_EQ(train.columns[3], "loss");
  // A row per display with its train net outputs: iterations 0, 5, ..., 25 (the final
  // "Iteration 30, loss" line has no outputs, in Caffe's logs too).
  ASSERT_EQ(train.rows.size(), 6u) << ReadText(Path("train.log.train"));
  double last_seconds = 0;
  for (std::size_t i = 0; i < train.rows.size(); ++i) {
    EXPECT_EQ(train.rows[i][0], 5.0 * i);
    EXPECT_GE(train.rows[i][1], last_seconds);
    last_seconds = train.rows[i][1];
    EXPECT_TRUE(std::isfinite(train.rows[i][3]));
  }
  EXPECT_LT(last_seconds, 600);
  // The rate halves every 10 iterations; a row carries the rate of the last "lr =" line
  // before it, as in Caffe's tables.
  EXPECT_EQ(train.rows[3][2], 0.005);
  EXPECT_EQ(train.rows[5][2], 0.0025);

  const Table test = ReadCsv(Path("train.log.test"));
  ASSERT_EQ(test.columns.size(), 4u) << ReadText(Path("train.log.test"));
  EXPECT_EQ(test.columns[3], "loss");
  // Tests at iterations 0 (test_initialization), 10, 20 and 30.
  ASSERT_EQ(test.rows.size(), 4u) << ReadText(Path("train.log.test"));
  for (std::size_t i = 0; i < test.rows.size(); ++i) EXPECT_EQ(test.rows[i][0], 10.0 * i);
}

TEST_F(CaffeLogFormatTest, TheYearInThePrefixIsAFlagAndBreaksCaffesParser) {
  const Result run = Train("year.log", {"--log_year_in_prefix=true"});
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_TRUE(std::regex_search(run.output, std::regex("\nI20[0-9]{6} [0-9:.]{15} ")))
      << run.output;
  const Result parsed = Parse("year.log");
  EXPECT_NE(parsed.exit_code, 0) << parsed.output;
  EXPECT_NE(parsed.output.find("month must be in 1..12"), std::string::npos) << parsed.output;
}

}  // namespace
}  // namespace doppio
