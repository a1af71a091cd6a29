// tools/plot_training_log on a captured `doppio train` log (tests/tools/data) and on logs in
// Caffe's and in an MPI run's form, written here.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "cli_test_util.hpp"
#include "test_util.hpp"

namespace doppio {
namespace {

const std::string kTool = SourceDir() + "/tools/plot_training_log";
const std::string kCapturedLog = SourceDir() + "/tests/tools/data/doppio_lenet_quick.log";

// Caffe's log form: no year in the time stamp, the rate inside the iteration line.
const char* kCaffeLog =
    "I1121 23:59:58.000000  1234 solver.cpp:330] Iteration 0, Testing net (#0)\n"
    "I1121 23:59:59.000000  1234 solver.cpp:397]     Test net output #0: accuracy = 0.1\n"
    "I1121 23:59:59.000000  1234 solver.cpp:397]     Test net output #1: loss = 2.3 (* 1 = 2.3 "
    "loss)\n"
    "I1121 23:59:59.500000  1234 solver.cpp:218] Iteration 0 (0 iter/s, 0.9s/100 iters), loss "
    "= 2.31\n"
    "I1121 23:59:59.500000  1234 solver.cpp:237]     Train net output #0: loss = 2.31 (* 1 = "
    "2.31 loss)\n"
    "I1122 00:00:09.500000  1234 solver.cpp:218] Iteration 100 (10 iter/s, 10s/100 iters), loss "
    "= 0.25\n"
    "I1122 00:00:19.500000  1234 solver.cpp:330] Iteration 200, Testing net (#0)\n"
    "I1122 00:00:20.000000  1234 solver.cpp:397]     Test net output #0: accuracy = 0.95\n"
    "I1122 00:00:20.000000  1234 solver.cpp:330] Iteration 200, Testing net (#1)\n"
    "I1122 00:00:20.000000  1234 solver.cpp:397]     Test net output #0: accuracy = 0.5\n"
    "I1122 00:00:20.500000  1234 solver.cpp:218] Iteration 200 (10 iter/s, 10s/100 iters), loss "
    "= 0.125\n";

// An MPI run: rank 0 logs as usual; other ranks' lines carry "rank N" and are not plotted.
// Its rate line has the input pipeline's part, which is not a point either.
const char* kMpiLog =
    "I20261121 10:00:00.000000 77 solver.cpp:300] Iteration 0, loss = 2.5\n"
    "W20261121 10:00:01.000000 rank 1 solver.cpp:300] Iteration 50, loss = 99\n"
    "I20261121 10:00:02.000000 77 solver.cpp:300] Iteration 100, loss = 0.5\n"
    "I20261121 10:00:02.000000 77 solver.cpp:518] Iteration 100 (50.0 iter/s, 3200.0 images/s, "
    "ETA 0:00:18); input 5231.4 records/s; step waited for data 12.3 ms in 3 of 100 batches\n"
    "I20261121 10:00:03.000000 77 solver.cpp:364] Iteration 100, Testing net (#0)\n"
    "I20261121 10:00:04.000000 77 solver.cpp:413]     Test net output #0: accuracy = 0.9\n";

class PlotTrainingLogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cli_test::RunShell(
            "/usr/bin/python3 -c 'import matplotlib' || python3 -c 'import matplotlib'")
            .exit_code != 0) {
      GTEST_SKIP() << "matplotlib is missing: apt-get install python3-matplotlib "
                      "(scripts/setup.sh installs it)";
    }
  }
  std::string Path(const std::string& name) const { return dir_.path() + "/" + name; }
  void Write(const std::string& name, const std::string& text) {
    std::ofstream(Path(name)) << text;
  }
  // The PNG's size in bytes; 0 when it is missing or not a PNG.
  std::uintmax_t PngSize(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    char header[8] = {};
    in.read(header, 8);
    if (!in || std::string(header, 8) != "\x89PNG\r\n\x1a\n") return 0;
    return std::filesystem::file_size(path);
  }
  TempDir dir_;
};

TEST_F(PlotTrainingLogTest, WritesAPngOfACapturedDoppioLog) {
  const cli_test::Result run =
      cli_test::RunShell(kTool + " " + kCapturedLog + " -o " + Path("lenet.png") + " --print");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_GT(PngSize(Path("lenet.png")), 10000u) << run.output;
  EXPECT_CONTAINS(run.output, "26 training losses, test outputs ['accuracy']");
  // Points read from the log: iteration, seconds since its first line, value.
  EXPECT_CONTAINS(run.output, "train iteration 0  0.3 s  loss 2.31575");
  EXPECT_CONTAINS(run.output, "test iteration 500  30.2 s  accuracy 0.979");
  EXPECT_CONTAINS(run.output, "test iteration 2500  174.3 s  accuracy 0.9855");
  EXPECT_CONTAINS(run.output, "plot_training_log: wrote " + Path("lenet.png"));
}

TEST_F(PlotTrainingLogTest, ReadsCaffeLogsAndOverlaysSeveralLogs) {
  Write("caffe.log", kCaffeLog);
  const cli_test::Result run =
      cli_test::RunShell(kTool + " " + kCapturedLog + " " + Path("caffe.log") + " -o " +
                         Path("both.png") + " --labels 'doppio,caffe' --print");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_GT(PngSize(Path("both.png")), 10000u);
  EXPECT_CONTAINS(run.output, "caffe.log: 3 training losses, test outputs ['accuracy']");
  // Across midnight; the second test net's scores are left out.
  EXPECT_CONTAINS(run.output, "train iteration 100  11.5 s  loss 0.25");
  EXPECT_CONTAINS(run.output, "test iteration 200  22.0 s  accuracy 0.95\n");
  EXPECT_EQ(run.output.find("accuracy 0.5\n"), std::string::npos) << run.output;
  EXPECT_CONTAINS(run.output, "wrote " + Path("both.png") + " (doppio, caffe)");
}

TEST_F(PlotTrainingLogTest, SkipsOtherRanksAndNamesTheOutputAfterTheLog) {
  Write("np2.log", kMpiLog);
  const cli_test::Result run = cli_test::RunShell(kTool + " " + Path("np2.log") + " --print");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_GT(PngSize(Path("np2.png")), 10000u);
  EXPECT_CONTAINS(run.output, "2 training losses");
  EXPECT_EQ(run.output.find("loss 99"), std::string::npos) << run.output;
  EXPECT_CONTAINS(run.output, "test iteration 100  4.0 s  accuracy 0.9");
}

TEST_F(PlotTrainingLogTest, ALogWithoutTrainingLinesIsAnError) {
  Write("empty.log", "hello\nworld\n");
  const cli_test::Result run = cli_test::RunShell(kTool + " " + Path("empty.log"));
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_CONTAINS(run.output, "has no 'Iteration N, loss = X'");
  EXPECT_FALSE(std::filesystem::exists(Path("empty.png")));
  const cli_test::Result missing = cli_test::RunShell(kTool + " " + Path("missing.log"));
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_CONTAINS(missing.output, "missing.log' does not exist");
  const cli_test::Result labels =
      cli_test::RunShell(kTool + " " + kCapturedLog + " --labels a,b -o " + Path("x.png"));
  EXPECT_NE(labels.exit_code, 0);
  EXPECT_CONTAINS(labels.output, "--labels has 2 names for 1 logs");
}

}  // namespace
}  // namespace doppio
