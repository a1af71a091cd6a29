// `doppio time` end to end: the binary is run as a user would run it.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "../data/data_test_helpers.hpp"
#include "cli_test_util.hpp"
#include "doppio/device/onednn.hpp"
#include "test_util.hpp"

namespace doppio {
namespace {

// Runs doppio from the source root, so models/ paths resolve.
cli_test::Result RunFromSourceRoot(const std::string& args) {
  TempDir dir;
  std::vector<std::string> argv;
  std::istringstream words(args);
  for (std::string word; words >> word;) argv.push_back(word);
  const std::string cwd = std::filesystem::current_path();
  std::filesystem::current_path(SourceDir());
  cli_test::Result result = cli_test::RunDoppio(argv, dir.path() + "/log");
  std::filesystem::current_path(cwd);
  return result;
}

std::string WriteFile(const TempDir& dir, const std::string& name, const std::string& text) {
  const std::string path = dir.path() + "/" + name;
  std::ofstream(path) << text;
  return path;
}

TEST(TimeCommand, TimesLeNetAndPrintsPerLayerTable) {
  const cli_test::Result run = RunFromSourceRoot(
      "time --model=models/lenet/train_val.prototxt --iterations=2 --input_shape=1,28,28 "
      "--batch=4");
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("Average Forward pass:"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("Average Backward pass:"), std::string::npos);
  EXPECT_NE(run.output.find("Average Forward-Backward:"), std::string::npos);
  EXPECT_NE(run.output.find("conv1"), std::string::npos);
  EXPECT_NE(run.output.find("Convolution"), std::string::npos);
  EXPECT_NE(run.output.find("Peak host memory: "), std::string::npos);
  EXPECT_NE(run.output.find("the net needs "), std::string::npos);
}

TEST(TimeCommand, EngineFlagPicksTheEngineOfEveryLayerItCanRun) {
  const std::string args =
      "time --model=models/lenet/train_val.prototxt --iterations=1 --input_shape=1,28,28 "
      "--batch=2 --engine=";
  const cli_test::Result caffe = RunFromSourceRoot(args + "CAFFE");
  EXPECT_EQ(caffe.exit_code, 0) << caffe.output;
  EXPECT_NE(caffe.output.find("Engine CAFFE runs 9 layers:"), std::string::npos) << caffe.output;
#ifdef DOPPIO_WITH_ONEDNN
  const cli_test::Result onednn = RunFromSourceRoot(args + "ONEDNN");
  EXPECT_EQ(onednn.exit_code, 0) << onednn.output;
  // The loss and the data have no oneDNN engine; they keep Doppio's own.
  EXPECT_NE(
      onednn.output.find("Engine ONEDNN runs 7 layers: conv1 pool1 conv2 pool2 ip1 relu1 ip2"),
      std::string::npos)
      << onednn.output;
  EXPECT_NE(onednn.output.find("Convolution        ONEDNN"), std::string::npos) << onednn.output;
#endif
  const cli_test::Result bogus = RunFromSourceRoot(args + "WARP");
  EXPECT_EQ(bogus.exit_code, 1);
  EXPECT_NE(bogus.output.find("--engine=WARP"), std::string::npos) << bogus.output;
}

#ifdef DOPPIO_WITH_ONEDNN
TEST(TimeCommand, PrecisionFlagNamesEachLayersPrecision) {
  const std::string args =
      "time --model=models/cifar10_quick/train_val.prototxt --iterations=1 "
      "--input_shape=3,32,32 --batch=2 --engine=ONEDNN --precision=";
  const cli_test::Result fp32 = RunFromSourceRoot(args + "fp32");
  EXPECT_EQ(fp32.exit_code, 0) << fp32.output;
  EXPECT_NE(fp32.output.find("Convolution        ONEDNN  fp32"), std::string::npos) << fp32.output;
  const cli_test::Result bf16 = RunFromSourceRoot(args + "bf16");
  if (OnednnBf16Missing().empty()) {
    EXPECT_EQ(bf16.exit_code, 0) << bf16.output;
    EXPECT_NE(bf16.output.find("Convolution        ONEDNN  bf16"), std::string::npos)
        << bf16.output;
    // The loss needs fp32's range and keeps it.
    EXPECT_NE(bf16.output.find("SoftmaxWithLoss    CAFFE   fp32"), std::string::npos)
        << bf16.output;
  } else {
    EXPECT_EQ(bf16.exit_code, 1) << bf16.output;
    EXPECT_NE(bf16.output.find("avx512_bf16"), std::string::npos) << bf16.output;
  }
  const cli_test::Result fp16 = RunFromSourceRoot(args + "fp16");
  EXPECT_EQ(fp16.exit_code, 1) << fp16.output;
  EXPECT_NE(fp16.output.find("precision fp16 on the CPU"), std::string::npos) << fp16.output;
  const cli_test::Result bogus = RunFromSourceRoot(args + "fp8");
  EXPECT_EQ(bogus.exit_code, 1) << bogus.output;
  EXPECT_NE(bogus.output.find("--precision must be"), std::string::npos) << bogus.output;
}

TEST(TimeCommand, OnednnWinogradFlagTurnsWinogradOff) {
  TempDir dir;
  const std::string path = WriteFile(
      dir, "conv3x3.prototxt",
      "layer { name: 'in' type: 'Input' top: 'x' input_param { shape { dim: 2 dim: 16 dim: 14 "
      "dim: 14 } } }\n"
      "layer { name: 'conv' type: 'Convolution' bottom: 'x' top: 'y' convolution_param { "
      "num_output: 16 kernel_size: 3 pad: 1 } }\n");
  const cli_test::Result on = RunFromSourceRoot("time --iterations=1 --model=" + path);
  ASSERT_EQ(on.exit_code, 0) << on.output;
  if (on.output.find("Winograd's algorithm") == std::string::npos) {
    GTEST_SKIP() << "oneDNN has no Winograd kernel for this shape on this CPU";
  }
  const cli_test::Result off =
      RunFromSourceRoot("time --iterations=1 --onednn_winograd=false --model=" + path);
  ASSERT_EQ(off.exit_code, 0) << off.output;
  EXPECT_EQ(off.output.find("Winograd"), std::string::npos) << off.output;
}
#endif

TEST(TimeCommand, ExplicitOnednnWhereItCannotRunNamesTheLayer) {
  TempDir dir;
  const std::string path = WriteFile(
      dir, "stochastic.prototxt",
      "layer { name: 'in' type: 'Input' top: 'x' input_param { shape { dim: 1 dim: 1 dim: 4 "
      "dim: 4 } } }\n"
      "layer { name: 'pool' type: 'Pooling' bottom: 'x' top: 'y' pooling_param { "
      "pool: STOCHASTIC kernel_size: 2 engine: ONEDNN } }\n");
  const cli_test::Result run = RunFromSourceRoot("time --model=" + path);
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_NE(run.output.find("layer 'pool' (Pooling)"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("engine ONEDNN"), std::string::npos) << run.output;
}

// Caffe's LeNet train/test net reading `train_source`, as a user's file.
std::string LeNetReading(const TempDir& dir, const std::string& train_source) {
  std::string text = cli_test::ReadText(SourceDir() + "/models/lenet/train_val.prototxt");
  const std::string placeholder = "data/mnist/mnist_train_lmdb";
  text.replace(text.find(placeholder), placeholder.size(), train_source);
  return WriteFile(dir, "lenet.prototxt", text);
}

TEST(TimeCommand, TakesTheImageSizeFromTheDataLayersLmdb) {
  TempDir dir;
  const std::string source = dir.path() + "/mnist_lmdb";
  testing_data::WriteDatumLmdb(source, testing_data::IndexedDatums(2, 1, 28, 28));
  const cli_test::Result run =
      RunFromSourceRoot("time --model=" + LeNetReading(dir, source) + " --iterations=1");
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("layer 'mnist' (Data): synthetic tops 64x1x28x28, 64, shaped from "
                            "the first record of LMDB '" +
                            source + "'"),
            std::string::npos)
      << run.output;
}

TEST(TimeCommand, AnUnreadableSourceNamesTheLayerAndTheSource) {
  TempDir dir;
  const cli_test::Result run =
      RunFromSourceRoot("time --model=" + LeNetReading(dir, "/no/such/lmdb") + " --iterations=1");
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_NE(run.output.find("layer 'mnist' (Data): cannot tell the image size it produces: its "
                            "source '/no/such/lmdb' (data_param.source) cannot be read"),
            std::string::npos)
      << run.output;
  EXPECT_NE(run.output.find("give --input_shape=C,H,W"), std::string::npos) << run.output;
}

TEST(TimeCommand, MissingModelFile) {
  const cli_test::Result run = RunFromSourceRoot("time --model=/no/such/net.prototxt");
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_NE(run.output.find("/no/such/net.prototxt"), std::string::npos) << run.output;
}

TEST(TimeCommand, MalformedPrototxtNamesLineAndColumn) {
  TempDir dir;
  const std::string path = WriteFile(
      dir, "bad.prototxt", "name: 'x'\nlayer {\n  name: 'a'\n  type: 'ReLU'\n  bottom 'x'\n}\n");
  const cli_test::Result run = RunFromSourceRoot("time --model=" + path);
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
  const cli_test::Result run = RunFromSourceRoot("time --model=" + path);
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
  const cli_test::Result run = RunFromSourceRoot("time --model=" + path);
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_NE(run.output.find("'conv'"), std::string::npos) << run.output;
}

TEST(TimeCommand, UnknownCommandAndHelp) {
  EXPECT_EQ(RunFromSourceRoot("frobnicate").exit_code, 2);
  const cli_test::Result help = RunFromSourceRoot("--help");
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.output.find("time"), std::string::npos);
}

}  // namespace
}  // namespace doppio
