// A model file with no layers, or a solver file that names no net, is an error naming the
// file for every command, never a net of nothing timed, scored or trained with exit 0.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "cli_test_util.hpp"
#include "test_util.hpp"

namespace doppio {
namespace {

using namespace cli_test;

const char* kNet = R"(
name: "small"
layer { name: "data" type: "DummyData" top: "x" top: "y"
        dummy_data_param { shape { dim: 4 dim: 3 } shape { dim: 4 dim: 1 }
                           data_filler { type: "gaussian" std: 1 } } }
layer { name: "ip" type: "InnerProduct" bottom: "x" top: "out"
        inner_product_param { num_output: 1 weight_filler { type: "gaussian" std: 0.5 } } }
layer { name: "loss" type: "EuclideanLoss" bottom: "out" bottom: "y" top: "loss" }
)";

class EmptyFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(std::filesystem::exists(DoppioBinary()))
        << DoppioBinary() << " is missing: build the doppio_cli target first";
    WriteText(Path("empty.prototxt"), "");
    WriteText(Path("net.prototxt"), kNet);
  }
  std::string Path(const std::string& name) const { return dir_.path() + "/" + name; }
  std::string Write(const std::string& name, const std::string& text) const {
    WriteText(Path(name), text);
    return Path(name);
  }
  Result Run(const std::vector<std::string>& args) const {
    return RunDoppio(args, Path("log.txt"));
  }
  // Expects a failure whose output names `file` and contains `why`.
  void ExpectRefused(const std::vector<std::string>& args, const std::string& file,
                     const std::string& why) const {
    const Result run = Run(args);
    EXPECT_NE(run.exit_code, 0) << run.output;
    EXPECT_CONTAINS(run.output, file);
    EXPECT_CONTAINS(run.output, why);
    EXPECT_EQ(run.output.find("Check failed"), std::string::npos) << run.output;
  }
  TempDir dir_;
};

TEST_F(EmptyFilesTest, TimeRefusesAModelWithNoLayers) {
  ExpectRefused({"time", "--model=" + Path("empty.prototxt"), "--iterations=1"},
                Path("empty.prototxt"), "defines no layers");
  const std::string named = Write("named.prototxt", "# only a name\nname: \"nothing\"\n");
  ExpectRefused({"time", "--model=" + named, "--iterations=1"}, named, "defines no layers");
}

TEST_F(EmptyFilesTest, TestRefusesAModelWithNoLayers) {
  ExpectRefused({"test", "--model=" + Path("empty.prototxt"),
                 "--weights=" + Path("absent.caffemodel"), "--iterations=1"},
                Path("empty.prototxt"), "defines no layers");
}

TEST_F(EmptyFilesTest, TrainRefusesASolverWithNoNet) {
  const std::string solver = Write("empty_solver.prototxt", "");
  ExpectRefused({"train", "--solver=" + solver}, solver, "no training net");
  const std::string no_net = Write("no_net.prototxt", "base_lr: 0.1\nlr_policy: \"fixed\"\n");
  ExpectRefused({"train", "--solver=" + no_net}, no_net, "no training net");
  const std::string empty_param =
      Write("empty_param.prototxt", "net_param { name: \"x\" }\nbase_lr: 0.1\n");
  ExpectRefused({"train", "--solver=" + empty_param}, empty_param, "net_param defines no layers");
}

TEST_F(EmptyFilesTest, TrainRefusesNetFilesWithNoLayers) {
  const std::string empty = Path("empty.prototxt");
  const std::string tail = "base_lr: 0.1\nlr_policy: \"fixed\"\nmax_iter: 1\nsnapshot_prefix: \"" +
                           Path("snap") + "\"\n";
  const std::string net = Write("net_solver.prototxt", "net: \"" + empty + "\"\n" + tail);
  ExpectRefused({"train", "--solver=" + net}, empty, "defines no layers");
  const std::string train_net =
      Write("train_net_solver.prototxt", "train_net: \"" + empty + "\"\n" + tail);
  ExpectRefused({"train", "--solver=" + train_net}, empty, "defines no layers");
  const std::string test_net = Write("test_net_solver.prototxt",
                                     "train_net: \"" + Path("net.prototxt") + "\"\ntest_net: \"" +
                                         empty + "\"\ntest_iter: 1\ntest_interval: 1\n" + tail);
  ExpectRefused({"train", "--solver=" + test_net}, empty, "defines no layers");
}

// Layers that the phase filters out all count: only a file without any is refused.
TEST_F(EmptyFilesTest, ANetWhoseLayersAreAllFilteredOutStillBuilds) {
  const std::string test_only =
      Write("test_only.prototxt",
            "layer { name: \"in\" type: \"Input\" top: \"x\" include { phase: TEST }\n"
            "        input_param { shape { dim: 1 dim: 2 } } }\n");
  const Result run = Run({"time", "--model=" + test_only, "--phase=TRAIN", "--iterations=1"});
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_CONTAINS(run.output, "0 layers");
}

}  // namespace
}  // namespace doppio
