// `doppio time/test/train --gpu` as a user runs them: on the GPU when there is one, and a
// clear error (non-zero exit, naming --gpu or the missing device) when there is none or the
// build has no GPU support. device_query lists what there is.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <regex>
#include <sstream>
#include <string>

#include "cli_test_util.hpp"
#include "doppio/device/gpu_context.hpp"
#include "test_util.hpp"

namespace doppio {
namespace {

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

const char* kTimeLeNet =
    "time --model=models/lenet/train_val.prototxt --iterations=2 --input_shape=1,28,28 "
    "--batch=4 --gpu=0";

TEST(GpuFlag, TimeOnTheGpuOrAClearError) {
  const cli_test::Result run = RunFromSourceRoot(kTimeLeNet);
  if (GpuDeviceCount() > 0) {
    EXPECT_EQ(run.exit_code, 0) << run.output;
    EXPECT_NE(run.output.find("Average Forward-Backward"), std::string::npos) << run.output;
    EXPECT_NE(run.output.find("GPU 0"), std::string::npos) << run.output;
  } else {
    EXPECT_NE(run.exit_code, 0) << run.output;
    EXPECT_TRUE(run.output.find("GPU 0 requested") != std::string::npos ||
                run.output.find("no GPU support") != std::string::npos)
        << run.output;
    EXPECT_NE(run.output.find("without --gpu"), std::string::npos) << run.output;
  }
}

TEST(GpuFlag, TimeInBf16AndFp16NamesTheLayersThatRunIn16Bits) {
  if (GpuDeviceCount() == 0) GTEST_SKIP() << "no CUDA device";
  for (const std::string precision : {"bf16", "fp16"}) {
    const cli_test::Result run =
        RunFromSourceRoot(std::string(kTimeLeNet) + " --precision=" + precision);
    ASSERT_EQ(run.exit_code, 0) << run.output;
    EXPECT_NE(run.output.find("Precision " + precision + " runs"), std::string::npos) << run.output;
    const std::regex row("InnerProduct +[A-Z]+ +" + precision);
    EXPECT_TRUE(std::regex_search(run.output, row)) << run.output;
    // The loss keeps fp32's range.
    EXPECT_TRUE(std::regex_search(run.output, std::regex("SoftmaxWithLoss +[A-Z]+ +fp32")))
        << run.output;
  }
}

TEST(GpuFlag, TimeReportsThePeakDeviceMemoryNextToWhatTheNetNeeds) {
  if (GpuDeviceCount() == 0) GTEST_SKIP() << "no CUDA device";
  const cli_test::Result run = RunFromSourceRoot(kTimeLeNet);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const std::regex line(
      R"(Peak device memory: ([\d.]+) MiB; the net needs ([\d.]+) MiB \(parameters ([\d.]+) MiB, )"
      R"(activations ([\d.]+) MiB, workspace ([\d.]+) MiB\))");
  std::smatch report;
  ASSERT_TRUE(std::regex_search(run.output, report, line)) << run.output;
  const double peak = std::stod(report[1]), needs = std::stod(report[2]);
  const double parameters = std::stod(report[3]);
  // Backward wrote every parameter's diff: the whole arena is on the device.
  EXPECT_GE(peak, parameters);
  // Beyond what the net needs, only the allocator's rounding and the buffers layers keep for
  // Backward may be held. The allocator rounds blocks over 1 MiB up to a multiple of 2 MiB:
  // at batch 4 only the parameter arena's two blocks (data, diff; 1.6 MiB each) are that
  // large. Smaller blocks round up to 512 bytes, and the kept buffers (the pooling layers'
  // argmax positions, softmax's probabilities) are under 0.1 MiB: 0.25 MiB covers those
  // and the printed figures' rounding. A second copy of the parameters would not fit.
  const double block = parameters / 2;
  const double arena_rounding = 2 * (std::ceil(block / 2) * 2 - block);
  EXPECT_LE(peak, needs + arena_rounding + 0.25) << run.output;
}

TEST(GpuFlag, BadDeviceIdIsAnError) {
  const cli_test::Result run = RunFromSourceRoot(
      "time --model=models/lenet/train_val.prototxt --iterations=1 --input_shape=1,28,28 "
      "--batch=2 --gpu=99");
  EXPECT_NE(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("GPU"), std::string::npos) << run.output;
}

TEST(GpuFlag, BadAlgorithmChoiceIsAnError) {
  if (GpuDeviceCount() == 0) GTEST_SKIP() << "no CUDA device: --gpu fails before the flag is read";
  const cli_test::Result run = RunFromSourceRoot(std::string(kTimeLeNet) + " --cudnn_algo=fastest");
  EXPECT_NE(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("--cudnn_algo"), std::string::npos) << run.output;
}

TEST(GpuFlag, DeviceQueryListsTheDevices) {
  const cli_test::Result run = RunFromSourceRoot("device_query");
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("CPU:"), std::string::npos) << run.output;
  if (GpuDeviceCount() > 0) {
    EXPECT_NE(run.output.find("Device id:"), std::string::npos) << run.output;
    EXPECT_NE(run.output.find("PCI bus id:"), std::string::npos) << run.output;
  }
}

TEST(GpuFlag, DeviceQueryOfGpusNeedsADevice) {
  const cli_test::Result run = RunFromSourceRoot("device_query --gpu=all");
  if (GpuDeviceCount() > 0) {
    EXPECT_EQ(run.exit_code, 0) << run.output;
    EXPECT_NE(run.output.find("Device id:"), std::string::npos) << run.output;
  } else {
    EXPECT_NE(run.exit_code, 0) << run.output;
    EXPECT_NE(run.output.find("--gpu=all given"), std::string::npos) << run.output;
  }
}

}  // namespace
}  // namespace doppio
