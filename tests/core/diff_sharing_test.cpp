// The training-time plan for activation gradients (ShareDiffMemory, core/activation_sharing):
// a net whose diffs share memory computes, over two forward-backward passes, the same loss,
// the same parameter gradients and the same input gradient as the same net without sharing,
// bit for bit (the same kernels in the same order on different buffers); it takes less
// memory; the diffs kept apart are the ones a user reads; a net with oneDNN layers is left
// alone. On the CPU with Doppio's kernels, and on the GPU (under the emulation too).
#include "doppio/core/activation_sharing.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "doppio/core/net.hpp"
#include "test_util.hpp"
#ifdef DOPPIO_WITH_CUDA
#include "gpu_test_util.hpp"
#endif

namespace doppio {
namespace {

// A fan-out (Split), Eltwise and Concat joins, in-place layers, a Flatten (aliases its
// bottom's diff), a second output that no loss reads, and two losses.
const char* kNet = R"(
  name: "diffs" force_backward: true
  state { phase: TRAIN }
  layer { name: "in" type: "Input" top: "x" top: "label"
          input_param { shape { dim: 3 dim: 2 dim: 6 dim: 6 } shape { dim: 3 } } }
  layer { name: "target" type: "Input" top: "side_target"
          input_param { shape { dim: 3 dim: 2 } } }
  layer { name: "conv" type: "Convolution" bottom: "x" top: "c"
          convolution_param { num_output: 4 kernel_size: 3 pad: 1 engine: CAFFE
                              weight_filler { type: "gaussian" std: 0.3 } } }
  layer { name: "relu" type: "ReLU" bottom: "c" top: "c" relu_param { engine: CAFFE } }
  layer { name: "a" type: "Convolution" bottom: "c" top: "a"
          convolution_param { num_output: 4 kernel_size: 1 engine: CAFFE
                              weight_filler { type: "gaussian" std: 0.3 } } }
  layer { name: "b" type: "TanH" bottom: "c" top: "b" tanh_param { engine: CAFFE } }
  layer { name: "sum" type: "Eltwise" bottom: "a" bottom: "b" top: "s"
          eltwise_param { engine: CAFFE } }
  layer { name: "cat" type: "Concat" bottom: "s" bottom: "c" top: "cat"
          concat_param { axis: 1 engine: CAFFE } }
  layer { name: "pool" type: "Pooling" bottom: "cat" top: "p"
          pooling_param { pool: MAX kernel_size: 2 stride: 2 engine: CAFFE } }
  layer { name: "flat" type: "Flatten" bottom: "p" top: "f" }
  layer { name: "ip" type: "InnerProduct" bottom: "f" top: "y"
          inner_product_param { num_output: 5 engine: CAFFE
                                weight_filler { type: "gaussian" std: 0.3 } } }
  layer { name: "loss" type: "SoftmaxWithLoss" bottom: "y" bottom: "label" top: "loss"
          softmax_param { engine: CAFFE } }
  layer { name: "side" type: "InnerProduct" bottom: "s" top: "side"
          inner_product_param { num_output: 2 engine: CAFFE
                                weight_filler { type: "gaussian" std: 0.3 } } }
  layer { name: "side_loss" type: "EuclideanLoss" bottom: "side" bottom: "side_target"
          top: "side_loss" loss_weight: 0.5 }
)";

std::unique_ptr<Net<float>> MakeNet(std::shared_ptr<GpuContext> gpu) {
  NetParameter param = ParseText<NetParameter>(kNet);
  return std::make_unique<Net<float>>(param, 1701, std::move(gpu));
}

void FillInputs(Net<float>& net, int pass) {
  Rng rng(100 + pass);
  FillGaussian(net.blob_by_name("x").get(), rng);
  FillGaussian(net.blob_by_name("side_target").get(), rng);
  float* label = net.blob_by_name("label")->mutable_cpu_data();
  for (int i = 0; i < 3; ++i) label[i] = float((i + pass) % 5);
}

void ExpectSameTraining(std::shared_ptr<GpuContext> gpu) {
  const auto plain = MakeNet(gpu);
  const auto shared = MakeNet(gpu);
  EXPECT_GT(ShareDiffMemory(shared.get()), 0u);
  for (int pass = 0; pass < 2; ++pass) {
    FillInputs(*plain, pass);
    FillInputs(*shared, pass);
    float loss[2];
    plain->Forward(&loss[0]);
    shared->Forward(&loss[1]);
    EXPECT_EQ(loss[0], loss[1]) << "pass " << pass;
    plain->Backward();
    shared->Backward();
    const auto& want = plain->learnable_params();
    const auto& got = shared->learnable_params();
    ASSERT_EQ(want.size(), got.size());
    for (std::size_t p = 0; p < want.size(); ++p) {
      for (int i = 0; i < want[p]->count(); ++i) {
        ASSERT_EQ(got[p]->cpu_diff()[i], want[p]->cpu_diff()[i])
            << "pass " << pass << " parameter " << p << " element " << i;
      }
    }
    // The input's gradient is kept apart: a user may read it after Backward.
    const Blob<float>& x_want = *plain->blob_by_name("x");
    const Blob<float>& x_got = *shared->blob_by_name("x");
    for (int i = 0; i < x_want.count(); ++i) {
      ASSERT_EQ(x_got.cpu_diff()[i], x_want.cpu_diff()[i]) << "pass " << pass << " x " << i;
    }
  }
  // Kept apart: outputs (the loss weights in their diffs), inputs; shared: the rest.
  for (const char* name : {"loss", "side_loss", "x", "label", "side_target"}) {
    EXPECT_FALSE(shared->blob_by_name(name)->diff()->is_view()) << name;
  }
  for (const char* name : {"a", "b", "s", "cat", "p", "y"}) {
    EXPECT_TRUE(shared->blob_by_name(name)->diff()->is_view()) << name;
  }
}

TEST(DiffSharingTest, CpuTrainingIsUnchanged) { ExpectSameTraining(nullptr); }

#ifdef DOPPIO_WITH_CUDA
TEST(DiffSharingTest, GpuTrainingIsUnchanged) {
  DOPPIO_REQUIRE_GPU();
  ExpectSameTraining(TestGpu());
}
#endif

#ifdef DOPPIO_WITH_ONEDNN
TEST(DiffSharingTest, NetsWithOnednnLayersKeepTheirDiffs) {
  NetParameter param = ParseText<NetParameter>(R"(
    name: "onednn" force_backward: true
    layer { name: "in" type: "Input" top: "x" input_param { shape { dim: 2 dim: 16 } } }
    layer { name: "ip" type: "InnerProduct" bottom: "x" top: "y"
            inner_product_param { num_output: 16 engine: ONEDNN
                                  weight_filler { type: "gaussian" } } }
    layer { name: "ip2" type: "InnerProduct" bottom: "y" top: "z"
            inner_product_param { num_output: 4 engine: ONEDNN
                                  weight_filler { type: "gaussian" } } }
  )");
  Net<float> net(param);
  EXPECT_EQ(ShareDiffMemory(&net), 0u);
  EXPECT_FALSE(net.blob_by_name("y")->diff()->is_view());
}
#endif

}  // namespace
}  // namespace doppio
