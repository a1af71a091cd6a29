// Training LeNet reduces the loss: the published LeNet prototxt with its data layers
// replaced by synthetic ones, and a LeNet-shaped net fed a learnable synthetic task.
#include <gtest/gtest.h>

#include <numeric>

#include "doppio/util/io.hpp"
#include "solver_test_util.hpp"
#include "synthetic_inputs.hpp"
#include "test_util.hpp"

namespace doppio {
namespace {

// The training loss of every iteration, read when its gradients are ready.
std::vector<float> TrainAndRecordLosses(Solver<float>& solver, int iterations) {
  std::vector<float> losses;
  Solver<float>* raw = &solver;
  solver.add_callbacks({nullptr, [raw, &losses] {
                          losses.push_back(raw->net()->blob_by_name("loss")->cpu_data()[0]);
                        }});
  solver.Step(iterations);
  return losses;
}

float Mean(const std::vector<float>& values, std::size_t begin, std::size_t end) {
  return std::accumulate(values.begin() + begin, values.begin() + end, 0.f) / (end - begin);
}

TEST(LeNetTrainingTest, PublishedLeNetWithDummyDataLearns) {
  NetParameter net = ReadNetParamsFromTextFile(SourceDir() + "/models/lenet/train_val.prototxt");
  net = WithSyntheticInputs(net, 16, {1, 28, 28});
  SolverParameter param =
      ReadSolverParamsFromTextFile(SourceDir() + "/models/lenet/solver.prototxt");
  param.clear_net();
  *param.mutable_net_param() = net;
  param.clear_test_iter();
  param.set_test_interval(0);
  param.set_snapshot(0);
  param.set_snapshot_after_train(false);
  param.set_random_seed(1);
  param.set_display(0);
  auto solver = SolverRegistry<float>::CreateSolver(param);
  const auto losses = TrainAndRecordLosses(*solver, 30);
  // Constant images labelled 0: the net quickly learns to answer 0.
  EXPECT_GT(losses.front(), 1.f);
  EXPECT_LT(Mean(losses, 25, 30), 0.1f * losses.front());
}

// Four classes, each a fixed random 28x28 pattern; every image is its class pattern plus
// fresh noise, so the task is learnable but not by heart.
constexpr int kClasses = 4;
constexpr int kBatch = 16;
constexpr int kPixels = 28 * 28;

const char* kLeNetLike = R"(
  name: 'LeNetLike'
  layer { name: 'data' type: 'Input' top: 'data' top: 'label'
          input_param { shape { dim: 16 dim: 1 dim: 28 dim: 28 } shape { dim: 16 } } }
  layer { name: 'conv1' type: 'Convolution' bottom: 'data' top: 'conv1'
          param { lr_mult: 1 } param { lr_mult: 2 }
          convolution_param { num_output: 20 kernel_size: 5 stride: 1
            weight_filler { type: 'xavier' } bias_filler { type: 'constant' } } }
  layer { name: 'pool1' type: 'Pooling' bottom: 'conv1' top: 'pool1'
          pooling_param { pool: MAX kernel_size: 2 stride: 2 } }
  layer { name: 'conv2' type: 'Convolution' bottom: 'pool1' top: 'conv2'
          param { lr_mult: 1 } param { lr_mult: 2 }
          convolution_param { num_output: 50 kernel_size: 5 stride: 1
            weight_filler { type: 'xavier' } bias_filler { type: 'constant' } } }
  layer { name: 'pool2' type: 'Pooling' bottom: 'conv2' top: 'pool2'
          pooling_param { pool: MAX kernel_size: 2 stride: 2 } }
  layer { name: 'ip1' type: 'InnerProduct' bottom: 'pool2' top: 'ip1'
          param { lr_mult: 1 } param { lr_mult: 2 }
          inner_product_param { num_output: 500
            weight_filler { type: 'xavier' } bias_filler { type: 'constant' } } }
  layer { name: 'relu1' type: 'ReLU' bottom: 'ip1' top: 'ip1' }
  layer { name: 'ip2' type: 'InnerProduct' bottom: 'ip1' top: 'ip2'
          param { lr_mult: 1 } param { lr_mult: 2 }
          inner_product_param { num_output: 4
            weight_filler { type: 'xavier' } bias_filler { type: 'constant' } } }
  layer { name: 'loss' type: 'SoftmaxWithLoss' bottom: 'ip2' bottom: 'label' top: 'loss' })";

TEST(LeNetTrainingTest, LeNetLikeNetLearnsASyntheticTask) {
  std::vector<float> patterns(kClasses * kPixels);
  Rng pattern_rng(11);
  for (float& value : patterns) value = static_cast<float>(pattern_rng.Uniform(0, 1));

  SolverParameter param = ParseText<SolverParameter>(
      "type: 'SGD' base_lr: 0.01 momentum: 0.9 weight_decay: 0.0005 lr_policy: 'inv' "
      "gamma: 0.0001 power: 0.75 display: 0 random_seed: 2 snapshot_after_train: false");
  *param.mutable_net_param() = ParseText<NetParameter>(kLeNetLike);
  auto solver = SolverRegistry<float>::CreateSolver(param);
  Net<float>& net = *solver->net();
  Rng noise_rng(12);
  solver->add_callbacks({[&] {
                           float* data = net.blob_by_name("data")->mutable_cpu_data();
                           float* label = net.blob_by_name("label")->mutable_cpu_data();
                           for (int n = 0; n < kBatch; ++n) {
                             const int cls = static_cast<int>(noise_rng.Below(kClasses));
                             label[n] = static_cast<float>(cls);
                             for (int p = 0; p < kPixels; ++p) {
                               data[n * kPixels + p] =
                                   patterns[cls * kPixels + p] +
                                   static_cast<float>(noise_rng.Gaussian(0, 0.5));
                             }
                           }
                         },
                         nullptr});
  const auto losses = TrainAndRecordLosses(*solver, 60);
  const float first = Mean(losses, 0, 5);
  const float last = Mean(losses, 55, 60);
  EXPECT_NEAR(first, std::log(static_cast<float>(kClasses)), 0.7f);
  EXPECT_LT(last, 0.3f * first) << "first " << first << " last " << last;
}

}  // namespace
}  // namespace doppio
