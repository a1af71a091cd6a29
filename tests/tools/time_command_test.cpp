// `doppio time` end to end: the binary is run as a user would run it.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "test_util.hpp"

namespace doppio {
namespace {

std::string WriteFile(const TempDir& dir, const std::string& name, const std::string& text) {
  const std::string path = dir.path() + "/" + name;
  std::ofstream(path) << text;
  return path;
}

TEST(TimeCommand, TimesLeNetAndPrintsPerLayerTable) {
  const CommandResult run = RunDoppio(
      "time --model=models/lenet/train_val.prototxt --iterations=2 --input_shape=1,28,28 "
      "--batch=4");
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("Average Forward pass:"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("Average Backward pass:"), std::string::npos);
  EXPECT_NE(run.output.find("Average Forward-Backward:"), std::string::npos);
  EXPECT_NE(run.output.find("conv1"), std::string::npos);
  EXPECT_NE(run.output.find("Convolution"), std::string::npos);
}

TEST(TimeCommand, MissingModelFile) {
  const CommandResult run = RunDoppio("time --model=/no/such/net.prototxt");
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_NE(run.output.find("/no/such/net.prototxt"), std::string::npos) << run.output;
}

TEST(TimeCommand, MalformedPrototxtNamesLineAndColumn) {
  TempDir dir;
  const std::string path = WriteFile(
      dir, "bad.prototxt", "name: 'x'\nlayer {\n  name: 'a'\n  type: 'ReLU'\n  bottom 'x'\n}\n");
  const CommandResult run = RunDoppio("time --model=" + path);
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_NE(run.output.find(path + ":5:"), std::string::npos) << run.output;
}

TEST(TimeCommand, UnknownLayerType) {
  TempDir dir;
  const std::string path =
      WriteFile(dir, "unknown.prototxt",
                "layer { name: 'in' type: 'Input' top: 'x' input_param { "
                "shape { dim: 1 dim: 2 } } }\n"
                "layer { name: 'warp' type: 'WarpDrive' bottom: 'x' top: 'y' }\n");
  const CommandResult run = RunDoppio("time --model=" + path);
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_NE(run.output.find("'warp'"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("WarpDrive"), std::string::npos) << run.output;
}

TEST(TimeCommand, KernelLargerThanInputIsAnErrorNotACrash) {
  TempDir dir;
  const std::string path = WriteFile(
      dir, "kernel.prototxt",
      "layer { name: 'in' type: 'Input' top: 'x' input_param { shape { dim: 1 dim: 1 dim: 4 "
      "dim: 4 } } }\n"
      "layer { name: 'conv' type: 'Convolution' bottom: 'x' top: 'y' convolution_param { "
      "num_output: 2 kernel_size: 7 } }\n");
  const CommandResult run = RunDoppio("time --model=" + path);
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_NE(run.output.find("'conv'"), std::string::npos) << run.output;
}

TEST(TimeCommand, UnknownCommandAndHelp) {
  EXPECT_EQ(RunDoppio("frobnicate").exit_code, 2);
  const CommandResult help = RunDoppio("--help");
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.output.find("time"), std::string::npos);
}

}  // namespace
}  // namespace doppio
