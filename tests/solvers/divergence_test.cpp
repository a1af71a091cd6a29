// Divergence: a NaN or infinity in the loss or the weights stops training with
// ExitCode::kDiverged, naming where it appeared, and no snapshot holding one is written.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <regex>

#include "doppio/solvers/sgd_solvers.hpp"
#include "doppio/util/io.hpp"
#include "doppio/util/rng.hpp"
#include "solver_test_util.hpp"

namespace doppio {
namespace {

using namespace solver_test;
namespace fs = std::filesystem;

// LeNet's layers at a smaller size, so that a run takes milliseconds.
const char* kSmallLeNet = R"(
  name: 'SmallLeNet'
  layer { name: 'data' type: 'Input' top: 'data' top: 'label'
          input_param { shape { dim: 4 dim: 1 dim: 20 dim: 20 } shape { dim: 4 } } }
  layer { name: 'conv1' type: 'Convolution' bottom: 'data' top: 'conv1'
          convolution_param { num_output: 8 kernel_size: 5
            weight_filler { type: 'xavier' } bias_filler { type: 'constant' } } }
  layer { name: 'pool1' type: 'Pooling' bottom: 'conv1' top: 'pool1'
          pooling_param { pool: MAX kernel_size: 2 stride: 2 } }
  layer { name: 'conv2' type: 'Convolution' bottom: 'pool1' top: 'conv2'
          convolution_param { num_output: 16 kernel_size: 5
            weight_filler { type: 'xavier' } bias_filler { type: 'constant' } } }
  layer { name: 'pool2' type: 'Pooling' bottom: 'conv2' top: 'pool2'
          pooling_param { pool: MAX kernel_size: 2 stride: 2 } }
  layer { name: 'ip1' type: 'InnerProduct' bottom: 'pool2' top: 'ip1'
          inner_product_param { num_output: 32
            weight_filler { type: 'xavier' } bias_filler { type: 'constant' } } }
  layer { name: 'relu1' type: 'ReLU' bottom: 'ip1' top: 'ip1' }
  layer { name: 'ip2' type: 'InnerProduct' bottom: 'ip1' top: 'ip2'
          inner_product_param { num_output: 4
            weight_filler { type: 'xavier' } bias_filler { type: 'constant' } } }
  layer { name: 'loss' type: 'SoftmaxWithLoss' bottom: 'ip2' bottom: 'label' top: 'loss' })";

class DivergenceTest : public ::testing::Test {
 protected:
  // SmallLeNet on random images, a snapshot after every iteration.
  std::unique_ptr<Solver<float>> MakeLeNetSolver(double base_lr) {
    SolverParameter param = ParseText<SolverParameter>(
        "type: 'SGD' momentum: 0.9 lr_policy: 'fixed' display: 0 random_seed: 5 max_iter: 20 "
        "snapshot: 1 snapshot_after_train: false");
    param.set_base_lr(base_lr);
    param.set_snapshot_prefix(dir_.path() + "/lenet");
    *param.mutable_net_param() = ParseText<NetParameter>(kSmallLeNet);
    auto solver = SolverRegistry<float>::CreateSolver(param);
    Net<float>* net = solver->net().get();
    solver->add_callbacks({[this, net] {
                             Blob<float>& data = *net->blob_by_name("data");
                             float* label = net->blob_by_name("label")->mutable_cpu_data();
                             rng_uniform(data.count(), 0.f, 1.f, rng_, data.mutable_cpu_data());
                             for (int n = 0; n < 4; ++n) label[n] = static_cast<float>(n);
                           },
                           nullptr});
    return solver;
  }

  // The iteration numbers of the .caffemodel files on disk, ascending.
  std::vector<int> SnapshotIterations() const {
    std::vector<int> iterations;
    const std::regex name("lenet_iter_([0-9]+)\\.caffemodel");
    for (const auto& entry : fs::directory_iterator(dir_.path())) {
      std::smatch match;
      const std::string file = entry.path().filename().string();
      if (std::regex_match(file, match, name)) iterations.push_back(std::stoi(match[1]));
    }
    std::sort(iterations.begin(), iterations.end());
    return iterations;
  }

  // Whether every value of every snapshot file on disk is finite.
  bool SnapshotsAreFinite() const {
    auto finite = [](const BlobProto& blob) {
      for (float value : blob.data()) {
        if (!std::isfinite(value)) return false;
      }
      return true;
    };
    for (int iter : SnapshotIterations()) {
      const std::string prefix = dir_.path() + "/lenet_iter_" + std::to_string(iter);
      NetParameter weights;
      ReadProtoFromBinaryFile(prefix + ".caffemodel", &weights);
      for (const auto& layer : weights.layer()) {
        for (const auto& blob : layer.blobs()) {
          if (!finite(blob)) return false;
        }
      }
      SolverState state;
      ReadProtoFromBinaryFile(prefix + ".solverstate", &state);
      for (const auto& blob : state.history()) {
        if (!finite(blob)) return false;
      }
    }
    return true;
  }

  TempDir dir_;
  Rng rng_{17};
};

TEST_F(DivergenceTest, HugeLearningRateStopsAtTheIterationWithTheFirstNaN) {
  // The run that goes on shows where the first NaN or infinity appears.
  int first_bad = -1;
  {
    auto reference = MakeLeNetSolver(1e30);
    reference->set_allow_nonfinite(true);
    Solver<float>* raw = reference.get();
    reference->add_callbacks({nullptr, nullptr, nullptr, [raw, &first_bad] {
                                if (first_bad >= 0) return;
                                const float loss = raw->net()->blob_by_name("loss")->cpu_data()[0];
                                const auto& params = raw->net()->learnable_params();
                                bool finite = std::isfinite(loss);
                                for (const auto* blob : params) {
                                  for (int i = 0; i < blob->count() && finite; ++i) {
                                    finite = std::isfinite(blob->cpu_data()[i]);
                                  }
                                }
                                if (!finite) first_bad = raw->iter();
                              }});
    reference->Step(6);
  }
  ASSERT_GE(first_bad, 0) << "lr 1e30 should diverge within 6 iterations";
  for (const auto& entry : fs::directory_iterator(dir_.path())) fs::remove(entry.path());

  auto solver = MakeLeNetSolver(1e30);
  rng_.Seed(17);
  const std::string message = ErrorMessageOf([&] { solver->Step(20); });
  EXPECT_NE(message.find("Iteration " + std::to_string(first_bad) + " "), std::string::npos)
      << message;
  EXPECT_NE(message.find("lr = 1e+30"), std::string::npos) << message;
  EXPECT_NE(message.find("training diverged"), std::string::npos) << message;
  EXPECT_TRUE(std::regex_search(
      message,
      std::regex("the first NaN or infinity is in .* of layer '[a-z0-9]+' \\([A-Za-z]+\\)")))
      << message;
  EXPECT_EQ(solver->iter(), first_bad);
  // The snapshot taken after the last good update is the newest, and no file holds a NaN.
  ASSERT_FALSE(SnapshotIterations().empty());
  EXPECT_EQ(SnapshotIterations().back(), first_bad);
  EXPECT_TRUE(SnapshotsAreFinite());
}

TEST_F(DivergenceTest, TheErrorCarriesTheDivergedExitCode) {
  auto solver = MakeLeNetSolver(1e30);
  try {
    solver->Step(20);
    FAIL() << "training should have diverged";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ExitCode::kDiverged) << error.what();
  }
}

TEST_F(DivergenceTest, APoisonedGradientIsNamedAndStopsBeforeTheNextSnapshot) {
  auto solver = MakeLeNetSolver(0.01);
  Net<float>* net = solver->net().get();
  Solver<float>* raw = solver.get();
  const int conv1 = 1;
  ASSERT_EQ(net->layer_names()[conv1], "conv1");
  // A fault in conv1's weight gradient at iteration 3: the forward pass stays finite.
  net->add_after_backward([net, raw](int id) {
    if (id == conv1 && raw->iter() == 3) {
      net->layers()[conv1]->blobs()[0]->mutable_cpu_diff()[7] =
          std::numeric_limits<float>::quiet_NaN();
    }
  });
  EXPECT_ERROR_WITH(solver->Step(20), "Iteration 3 (lr = 0.01)",
                    "the update made weights NaN or infinite",
                    "the diff of param #0 of layer 'conv1' (Convolution)");
  EXPECT_EQ(SnapshotIterations(), (std::vector<int>{1, 2, 3}));
  EXPECT_TRUE(SnapshotsAreFinite());
}

TEST_F(DivergenceTest, ANonFiniteLossLeavesTheWeightsAsTheyWere) {
  auto reference = MakeSolver<float>(LeastSquaresSolver(""));
  reference->Step(3);
  auto solver = MakeSolver<float>(LeastSquaresSolver(""), /*nan_at=*/3);
  // The targets of iteration 3 are NaN: the data layer's output is where it appeared.
  EXPECT_ERROR_WITH(solver->Step(10), "Iteration 3", "the loss is nan",
                    "top blob 'y' of layer 'data' (Input)");
  EXPECT_EQ(Weights(*solver), Weights(*reference));
  EXPECT_EQ(solver->iter(), 3);
}

TEST_F(DivergenceTest, AllowNonfiniteGoesOnAndWritesTheSnapshots) {
  auto solver = MakeLeNetSolver(1e30);
  solver->set_allow_nonfinite(true);
  EXPECT_NO_THROW(solver->Step(6));
  EXPECT_EQ(solver->iter(), 6);
  EXPECT_EQ(SnapshotIterations().back(), 6);
  EXPECT_FALSE(SnapshotsAreFinite());
}

TEST_F(DivergenceTest, TheSnapshotWriterRefusesANaNWeight) {
  SolverParameter param =
      LeastSquaresSolver("momentum: 0.9 snapshot_prefix: '" + dir_.path() + "/lsq'");
  auto solver = MakeSolver<float>(param);
  solver->Step(2);
  float* weight = solver->net()->layer_by_name("ip2")->blobs()[0]->mutable_cpu_data();
  const float good = weight[0];
  weight[0] = std::numeric_limits<float>::infinity();
  try {
    solver->Snapshot();
    FAIL() << "a snapshot with an infinite weight was written";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ExitCode::kDiverged);
    const std::string what = error.what();
    EXPECT_NE(what.find("refusing to write the snapshot " + dir_.path() + "/lsq_iter_2.caffemodel"),
              std::string::npos)
        << what;
    EXPECT_NE(what.find("param #0 of layer 'ip2' (InnerProduct)"), std::string::npos) << what;
  }
  // Neither file: a .solverstate without its weights would be no better.
  EXPECT_TRUE(fs::is_empty(dir_.path()));

  // The momentum history is checked too.
  weight[0] = good;
  auto* sgd = dynamic_cast<SGDSolver<float>*>(solver.get());
  ASSERT_NE(sgd, nullptr);
  // ip2's bias: history blob 1 in memory (the arena puts the last layer first), 3 in the
  // file (Caffe's order: ip1's weights and bias, then ip2's).
  const auto& net = *solver->net();
  ASSERT_EQ(net.learnable_params()[1], net.layer_by_name("ip2")->blobs()[1].get());
  sgd->history()[1]->mutable_cpu_data()[0] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_ERROR_WITH(solver->Snapshot(), "lsq_iter_2.solverstate",
                    "history blob #3 (of param #1 of layer 'ip2'");
  EXPECT_TRUE(fs::is_empty(dir_.path()));

  solver->set_allow_nonfinite(true);
  solver->Snapshot();
  EXPECT_TRUE(fs::exists(dir_.path() + "/lsq_iter_2.solverstate"));
}

}  // namespace
}  // namespace doppio
