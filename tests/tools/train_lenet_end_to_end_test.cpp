// End to end, as a user runs it: models/lenet trained by the doppio binary from a small
// generated LMDB, with 1 process and with 2 MPI ranks (mpiexec from CMake's FindMPI); the loss
// falls, the snapshot loads into `doppio test`, and 2 ranks of batch 16 follow the losses of
// 1 process of batch 32, on the CPU and (given a GPU) on GPUs.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <regex>
#include <string>
#include <vector>

#include "../data/data_test_helpers.hpp"
#include "doppio/device/gpu_context.hpp"
#include "doppio/parallel/nccl_communicator.hpp"
#include "doppio/util/io.hpp"
#include "test_util.hpp"

#ifndef DOPPIO_MPIEXEC
#define DOPPIO_MPIEXEC ""
#endif

namespace doppio {
namespace {

namespace fs = std::filesystem;

struct Output {
  int exit_code;
  std::string text;
};

// Runs a shell command with a time limit; stdout and stderr together.
Output Shell(const std::string& command, int timeout_seconds = 600) {
  const cli_test::Result result = cli_test::RunShell(
      "GLOG_logtostderr=1 timeout -k 10 " + std::to_string(timeout_seconds) + " " + command);
  return {result.exit_code, result.output};
}

std::string Doppio() { return BinaryDir() + "/tools/doppio"; }

std::string Mpiexec(int ranks) {
  return std::string(DOPPIO_MPIEXEC) + " --allow-run-as-root --oversubscribe -np " +
         std::to_string(ranks) + " ";
}

// Whether this build's doppio trains across MPI ranks.
bool DoppioSpeaksMpi() {
  return Shell(Doppio() + " train --help").text.find("--sync") != std::string::npos;
}

std::vector<std::pair<int, double>> Losses(const std::string& log) {
  std::vector<std::pair<int, double>> losses;
  const std::regex line(R"(Iteration (\d+), loss = ([-+.\deE]+|nan|inf))");
  for (std::sregex_iterator it(log.begin(), log.end(), line), end; it != end; ++it) {
    const int iteration = std::stoi((*it)[1]);
    if (!losses.empty() && losses.back().first == iteration) continue;  // printed twice at the end
    losses.emplace_back(iteration, std::stod((*it)[2]));
  }
  return losses;
}

class TrainLeNetEndToEndTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(fs::exists(Doppio())) << "build the doppio_cli target first";
    // Class k: a bright bar on rows 2k+4 .. 2k+5 over faint noise, 320 records.
    std::vector<Datum> datums;
    for (int i = 0; i < 320; ++i) {
      const int k = i % 10;
      datums.push_back(testing_data::MakeDatum(1, 28, 28, k, [&](int, int h, int w) {
        const int noise = (i * 131 + h * 17 + w * 29) % 40;
        return (h == 2 * k + 4 || h == 2 * k + 5) && w > 3 && w < 24 ? 200 + noise / 2 : noise;
      }));
    }
    testing_data::WriteDatumLmdb(Path("bars_lmdb"), datums);
  }
  std::string Path(const std::string& name) const { return dir_.path() + "/" + name; }

  // models/lenet with the generated LMDB for training and testing and a training batch of
  // `batch` per rank; returns the solver file. Snapshots go to DIR/<tag>_iter_N.
  std::string WriteRun(const std::string& tag, int batch) {
    NetParameter net = ReadNetParamsFromTextFile(SourceDir() + "/models/lenet/train_val.prototxt");
    for (auto& layer : *net.mutable_layer()) {
      if (layer.type() != "Data") continue;
      layer.mutable_data_param()->set_source(Path("bars_lmdb"));
      const bool train = layer.include(0).phase() == TRAIN;
      layer.mutable_data_param()->set_batch_size(train ? batch : 40);
    }
    WriteProtoToTextFile(net, Path(tag + "_net.prototxt"));
    SolverParameter solver = ParseText<SolverParameter>(
        "base_lr: 0.01 momentum: 0.9 weight_decay: 0.0005 lr_policy: 'fixed' max_iter: 60 "
        "display: 10 test_iter: 8 test_interval: 60 random_seed: 5 solver_mode: CPU");
    solver.set_net(Path(tag + "_net.prototxt"));
    solver.set_snapshot_prefix(Path(tag));
    WriteProtoToTextFile(solver, Path(tag + "_solver.prototxt"));
    return Path(tag + "_solver.prototxt");
  }

  // Trains, checks the loss falls and the snapshot scores well in `doppio test`; returns the
  // training losses.
  std::vector<std::pair<int, double>> TrainAndTest(const std::string& launcher,
                                                   const std::string& tag, int batch,
                                                   const std::string& flags = "") {
    const Output train =
        Shell(launcher + Doppio() + " train --solver=" + WriteRun(tag, batch) + " " + flags);
    EXPECT_EQ(train.exit_code, 0) << train.text;
    last_log_ = train.text;
    const auto losses = Losses(train.text);
    EXPECT_EQ(losses.size(), 7u) << train.text;
    if (losses.size() < 2) return losses;
    EXPECT_NEAR(losses.front().second, std::log(10.0), 0.5);
    EXPECT_LT(losses.back().second, 0.3 * losses.front().second) << train.text;
    // One process logs (rank 0): one "Optimization Done." however many ranks.
    std::size_t done = 0;
    for (std::size_t at = train.text.find("Optimization Done."); at != std::string::npos;
         at = train.text.find("Optimization Done.", at + 1)) {
      ++done;
    }
    EXPECT_EQ(done, 1u) << train.text;

    const std::string weights = Path(tag + "_iter_60.caffemodel");
    EXPECT_TRUE(fs::exists(weights)) << train.text;
    const Output test = Shell(Doppio() + " test --model=" + Path(tag + "_net.prototxt") +
                              " --weights=" + weights + " --iterations=8");
    EXPECT_EQ(test.exit_code, 0) << test.text;
    std::smatch accuracy;
    const std::regex final_accuracy(R"(\] accuracy = ([\d.]+))");
    EXPECT_TRUE(std::regex_search(test.text, accuracy, final_accuracy)) << test.text;
    if (!accuracy.empty()) EXPECT_GT(std::stod(accuracy[1]), 0.9) << test.text;
    return losses;
  }
  TempDir dir_;
  std::string last_log_;
};

TEST_F(TrainLeNetEndToEndTest, OneProcessLearnsAndItsSnapshotScores) {
  TrainAndTest("", "np1", 32);
}

TEST_F(TrainLeNetEndToEndTest, TwoRanksLearnLikeOneProcessOfTwiceTheBatch) {
  if (std::string(DOPPIO_MPIEXEC).empty()) GTEST_SKIP() << "CMake found no mpiexec";
  if (!DoppioSpeaksMpi()) GTEST_SKIP() << "this doppio has no MPI data-parallel training";
  const auto one = TrainAndTest("", "np1", 32);
  const auto two = TrainAndTest(Mpiexec(2), "np2", 16);
  ASSERT_EQ(one.size(), two.size());
  for (std::size_t i = 0; i < one.size(); ++i) {
    EXPECT_EQ(one[i].first, two[i].first);
    // The same arithmetic up to the order of the gradient sums.
    EXPECT_NEAR(one[i].second, two[i].second, 0.02 + 0.05 * one[i].second)
        << "iteration " << one[i].first;
  }
}

TEST_F(TrainLeNetEndToEndTest, TwoRanksOnGpusLearnLikeOneProcessOnTheCpu) {
  if (std::string(DOPPIO_MPIEXEC).empty()) GTEST_SKIP() << "CMake found no mpiexec";
  if (!DoppioSpeaksMpi()) GTEST_SKIP() << "this doppio has no MPI data-parallel training";
  const int devices = GpuDeviceCount();
  if (devices == 0) GTEST_SKIP() << "no CUDA device (" << GpuUnavailableReason() << ")";
  const auto one = TrainAndTest("", "cpu_np1", 32);
  // A GPU each when there are two (NCCL, when built), else both ranks on GPU 0 (staged MPI).
  const bool own = devices >= 2;
  const auto two = TrainAndTest(Mpiexec(2), "gpu_np2", 16,
                                std::string(own ? "--gpu=all" : "--gpu=0") + " --tf32_conv=false");
  EXPECT_NE(last_log_.find("Gradient exchange between the GPUs: " +
                           std::string(own && kBuiltWithNccl ? "NCCL" : "MPI, staged")),
            std::string::npos)
      << last_log_;
  ASSERT_EQ(one.size(), two.size());
  for (std::size_t i = 0; i < one.size(); ++i) {
    EXPECT_NEAR(one[i].second, two[i].second, 0.02 + 0.05 * one[i].second)
        << "iteration " << one[i].first;
  }
}

}  // namespace
}  // namespace doppio
