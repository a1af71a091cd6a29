// `doppio scale` end to end: the binary is run as a user would run it. The predictions use
// --tflops or a --time_json file, so that no test waits for a measurement.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "../data/data_test_helpers.hpp"
#include "cli_test_util.hpp"
#include "json_value.hpp"
#include "test_util.hpp"

namespace doppio {
namespace {

// Runs doppio from the source root, so models/ paths resolve.
cli_test::Result RunDoppio(const std::string& args, const TempDir& dir) {
  std::vector<std::string> argv;
  std::istringstream words(args);
  for (std::string word; words >> word;) argv.push_back(word);
  const std::string cwd = std::filesystem::current_path();
  std::filesystem::current_path(SourceDir());
  cli_test::Result result = cli_test::RunDoppio(argv, dir.path() + "/log");
  std::filesystem::current_path(cwd);
  return result;
}

const char kLeNet[] = "scale --model=models/lenet/train_val.prototxt --input_shape=1,28,28 ";

bool Has(const cli_test::Result& run, const std::string& text) {
  return run.output.find(text) != std::string::npos;
}

TEST(ScaleCommand, PredictsATableAndTheBestPlan) {
  TempDir dir;
  const cli_test::Result run = RunDoppio(
      std::string(kLeNet) + "--batch=64 --tflops=0.02 --ranks=1,2,4 --link=1gbit,10gbit", dir);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_TRUE(Has(run, "ms/iter")) << run.output;
  EXPECT_TRUE(Has(run, "exposed ms")) << run.output;
  EXPECT_TRUE(Has(run, "efficiency")) << run.output;
  EXPECT_TRUE(Has(run, "estimated from FLOPs at 0.02 TFLOPS")) << run.output;
  EXPECT_TRUE(Has(run, "1gbit: the largest rank count at >= 90% efficiency is")) << run.output;
  EXPECT_TRUE(Has(run, "10gbit, 4 ranks: best --sync=")) << run.output;
}

TEST(ScaleCommand, JsonRowsAgreeWithEachOther) {
  TempDir dir;
  const std::string json = dir.path() + "/rows.json";
  const cli_test::Result run =
      RunDoppio(std::string(kLeNet) +
                    "--batch=32 --tflops=0.02 --ranks=4,1,2 --link=1gbit,10gbit "
                    "--sync=blocking --json=" +
                    json,
                dir);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const JsonValue doc = ParseJson(cli_test::ReadText(json), json);
  ASSERT_NE(doc.Find("rows"), nullptr);
  const auto& rows = doc.Find("rows")->array;
  ASSERT_EQ(rows.size(), 6u);
  double previous = 0;
  for (const JsonValue& row : rows) {
    const int ranks = static_cast<int>(row.Find("ranks")->number);
    const double ms = row.Find("ms_per_iter")->number;
    EXPECT_EQ(row.Find("sync")->string, "blocking");
    EXPECT_NEAR(row.Find("images_per_s")->number, ranks * 32 / (ms / 1e3),
                1e-3 * ranks * 32 / ms * 1e3);
    EXPECT_NEAR(ms, row.Find("compute_ms")->number + row.Find("exposed_ms")->number, 1e-6 * ms);
    if (ranks == 1) {
      EXPECT_EQ(row.Find("efficiency")->number, 1);
      EXPECT_EQ(row.Find("exposed_ms")->number, 0);
    } else {
      // More ranks, longer allreduce: rows of a link are in rank order, 1, 2, 4.
      EXPECT_GT(ms, previous);
      EXPECT_LT(row.Find("efficiency")->number, 1);
    }
    previous = ms;
  }
  // The slower link exposes more.
  EXPECT_GT(rows[2].Find("exposed_ms")->number, rows[5].Find("exposed_ms")->number);
}

TEST(ScaleCommand, ReadsPerLayerTimesOfDoppioTime) {
  TempDir dir;
  const std::string times = dir.path() + "/times.json";
  const cli_test::Result time = RunDoppio(
      "time --model=models/lenet/train_val.prototxt --input_shape=1,28,28 --batch=8 "
      "--iterations=1 --json=" +
          times,
      dir);
  ASSERT_EQ(time.exit_code, 0) << time.output;
  const JsonValue profile = ParseJson(cli_test::ReadText(times), times);
  double compute = profile.Find("update_ms")->number;
  for (const JsonValue& layer : profile.Find("layers")->array) {
    compute += layer.Find("forward_ms")->number + layer.Find("backward_ms")->number;
  }
  const std::string rows = dir.path() + "/rows.json";
  const cli_test::Result scale = RunDoppio(std::string(kLeNet) +
                                               "--batch=8 --ranks=1 --link=10gbit "
                                               "--time_json=" +
                                               times + " --json=" + rows,
                                           dir);
  ASSERT_EQ(scale.exit_code, 0) << scale.output;
  EXPECT_TRUE(Has(scale, "from " + times)) << scale.output;
  const JsonValue doc = ParseJson(cli_test::ReadText(rows), rows);
  EXPECT_NEAR(doc.Find("rows")->array[0].Find("compute_ms")->number, compute, 1e-4 * compute);

  // --compute_ms keeps the shape and sets the total.
  const cli_test::Result scaled = RunDoppio(std::string(kLeNet) +
                                                "--batch=8 --ranks=1 --link=10gbit "
                                                "--compute_ms=50 --time_json=" +
                                                times + " --json=" + rows,
                                            dir);
  ASSERT_EQ(scaled.exit_code, 0) << scaled.output;
  EXPECT_NEAR(
      ParseJson(cli_test::ReadText(rows), rows).Find("rows")->array[0].Find("compute_ms")->number,
      50, 1e-3);

  // Measured at another batch, or on another net: an error naming what differs.
  const cli_test::Result batch = RunDoppio(
      std::string(kLeNet) + "--batch=16 --ranks=2 --link=10gbit --time_json=" + times, dir);
  EXPECT_EQ(batch.exit_code, 1);
  EXPECT_TRUE(Has(batch, "measured at batch 8")) << batch.output;
  const cli_test::Result other = RunDoppio(
      "scale --model=models/cifar10_quick/train_val.prototxt --input_shape=3,32,32 --batch=8 "
      "--ranks=2 --link=10gbit --time_json=" +
          times,
      dir);
  EXPECT_EQ(other.exit_code, 1);
  EXPECT_TRUE(Has(other, times)) << other.output;
}

TEST(ScaleCommand, TakesTheImageSizeFromTheDataLayersLmdb) {
  TempDir dir;
  const std::string source = dir.path() + "/mnist_lmdb";
  testing_data::WriteDatumLmdb(source, testing_data::IndexedDatums(2, 1, 28, 28));
  std::string text = cli_test::ReadText(SourceDir() + "/models/lenet/train_val.prototxt");
  const std::string placeholder = "data/mnist/mnist_train_lmdb";
  text.replace(text.find(placeholder), placeholder.size(), source);
  const std::string model = dir.path() + "/lenet.prototxt";
  std::ofstream(model) << text;
  const cli_test::Result run =
      RunDoppio("scale --model=" + model + " --tflops=0.02 --ranks=1,2 --link=10gbit", dir);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_TRUE(Has(
      run, "synthetic tops 64x1x28x28, 64, shaped from the first record of LMDB '" + source + "'"))
      << run.output;
  EXPECT_TRUE(Has(run, "batch 64 per rank")) << run.output;
}

TEST(ScaleCommand, BadInputIsAnErrorNamingTheFlag) {
  TempDir dir;
  const std::string lenet = std::string(kLeNet) + "--batch=8 --tflops=0.02 ";
  const struct {
    std::string args;
    std::string message;
  } cases[] = {
      {lenet + "--link=fast", "--link: unknown link rate 'fast'"},
      {lenet + "--link=unlimited", "an unlimited link has no rate to model"},
      {lenet + "--ranks=1,2", "needs --link=RATE"},
      {lenet + "--link=1gbit --ranks=", "--ranks is empty"},
      {lenet + "--link=1gbit --ranks=0,2", "every rank count must be at least 1"},
      {lenet + "--link=1gbit --sync=fast", "--sync must be overlap, reduce_bcast or blocking"},
      {lenet + "--link=1gbit --collectives=gloo", "--collectives must be mpi or nccl"},
      {lenet + "--link=1gbit --comm_cpu_gbs=-1", "--comm_cpu_gbs must not be negative"},
      {lenet + "--link=1gbit --shared_cores=-2", "--shared_cores must not be negative"},
      {lenet + "--link=1gbit --comm_cpu_curve=65536", "'65536' is not BYTES:GBS"},
      {lenet + "--link=1gbit --comm_cpu_curve=1e6:x", "'1e6:x' is not BYTES:GBS"},
      {lenet + "--link=1gbit --comm_cpu_curve=0:1", "bytes must be positive"},
      {lenet + "--link=1gbit --comm_cpu_curve=4e6:1,1e6:2", "sizes must increase"},
      {lenet + "--link=1gbit --comm_cpu_curve=1e6:1 --comm_cpu_gbs=1",
       "give --comm_cpu_gbs or --comm_cpu_curve, not both"},
      {lenet + "--bandwidth_gbps=1 --bandwidth_curve=1e6", "'1e6' is not BYTES:GBPS"},
      {lenet + "--bandwidth_gbps=1 --bandwidth_curve=1e6:0", "every rate must be positive"},
      {lenet + "--bandwidth_gbps=1 --bandwidth_curve=4e6:1,1e6:2", "sizes must increase"},
      {lenet + "--link=1gbit --bandwidth_curve=1e6:1", "--bandwidth_curve refines a measured"},
      {lenet + "--link=1gbit --broadcast_factor=0", "--broadcast_factor must be positive"},
      {std::string(kLeNet) + "--link=1gbit --time_json=/no/such.json", "/no/such.json"},
      {"scale --calibrate", "mpirun -np 2"},
  };
  for (const auto& c : cases) {
    const cli_test::Result run = RunDoppio(c.args, dir);
    EXPECT_EQ(run.exit_code, 1) << c.args << "\n" << run.output;
    EXPECT_TRUE(Has(run, c.message)) << c.args << "\n" << run.output;
  }
}

TEST(ScaleCommand, AModelThatCannotBeBuiltNamesTheLayer) {
  TempDir dir;
  const std::string path = dir.path() + "/kernel.prototxt";
  cli_test::WriteText(path,
                      "layer { name: 'in' type: 'Input' top: 'x' input_param { shape { dim: 1 "
                      "dim: 1 dim: 4 dim: 4 } } }\n"
                      "layer { name: 'conv' type: 'Convolution' bottom: 'x' top: 'y' "
                      "convolution_param { num_output: 2 kernel_size: 7 } }\n");
  const cli_test::Result run = RunDoppio("scale --model=" + path + " --link=1gbit --tflops=1", dir);
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_TRUE(Has(run, "'conv'")) << run.output;
  const cli_test::Result missing =
      RunDoppio("scale --model=/no/such/net.prototxt --link=1gbit", dir);
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_TRUE(Has(missing, "/no/such/net.prototxt")) << missing.output;
}

TEST(ScaleCommand, PlotsEfficiencyAndThroughput) {
  if (std::system("/usr/bin/python3 -c 'import matplotlib' 2>/dev/null || python3 -c 'import "
                  "matplotlib' 2>/dev/null") != 0) {
    GTEST_SKIP() << "matplotlib is missing: apt-get install python3-matplotlib";
  }
  TempDir dir;
  const std::string png = dir.path() + "/scaling.png";
  const cli_test::Result run =
      RunDoppio(std::string(kLeNet) +
                    "--batch=8 --tflops=0.02 --ranks=1,2,4,8 --link=1gbit,10gbit "
                    "--plot=" +
                    png,
                dir);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  ASSERT_TRUE(std::filesystem::exists(png)) << run.output;
  const std::string bytes = cli_test::ReadText(png);
  EXPECT_EQ(bytes.substr(1, 3), "PNG");
}

}  // namespace
}  // namespace doppio
