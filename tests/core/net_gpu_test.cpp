// A net on the GPU against the same net on the CPU: loss, outputs, parameter gradients in
// the arena, and the update. Skipped without a device.
#include <gtest/gtest.h>

#include "doppio/core/net.hpp"
#include "doppio/util/io.hpp"
#include "gpu_test_util.hpp"
#include "test_util.hpp"

namespace doppio {
namespace {

// A small LeNet-like net with every kind of arena user: convolution (cuDNN on the GPU),
// pooling, LRN, batch norm and scale, in-place ReLU, dropout in TEST, inner product, loss
// and accuracy.
const char* kSmallNet = R"(
  name: "small"
  layer { name: "data" type: "Input" top: "data" top: "label"
          input_param { shape { dim: 4 dim: 3 dim: 12 dim: 12 } shape { dim: 4 } } }
  layer { name: "conv1" type: "Convolution" bottom: "data" top: "conv1"
          convolution_param { num_output: 6 kernel_size: 3 pad: 1
                              weight_filler { type: "xavier" } bias_filler { type: "gaussian" std: 0.1 } } }
  layer { name: "bn1" type: "BatchNorm" bottom: "conv1" top: "conv1" }
  layer { name: "scale1" type: "Scale" bottom: "conv1" top: "conv1" scale_param { bias_term: true } }
  layer { name: "relu1" type: "ReLU" bottom: "conv1" top: "conv1" }
  layer { name: "pool1" type: "Pooling" bottom: "conv1" top: "pool1"
          pooling_param { pool: MAX kernel_size: 2 stride: 2 } }
  layer { name: "norm1" type: "LRN" bottom: "pool1" top: "norm1" lrn_param { local_size: 3 } }
  layer { name: "conv2" type: "Convolution" bottom: "norm1" top: "conv2"
          convolution_param { num_output: 4 kernel_size: 3 group: 2
                              weight_filler { type: "xavier" } } }
  layer { name: "tanh2" type: "TanH" bottom: "conv2" top: "conv2" }
  layer { name: "pool2" type: "Pooling" bottom: "conv2" top: "pool2"
          pooling_param { pool: AVE kernel_size: 2 stride: 2 } }
  layer { name: "ip1" type: "InnerProduct" bottom: "pool2" top: "ip1"
          inner_product_param { num_output: 5 weight_filler { type: "xavier" } } }
  layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip1" bottom: "label" top: "loss" }
  layer { name: "accuracy" type: "Accuracy" bottom: "ip1" bottom: "label" top: "accuracy" }
)";

template <typename Dtype>
void FillInputs(Net<Dtype>& net) {
  Rng rng(21);
  FillGaussian(net.blob_by_name("data").get(), rng);
  Dtype* labels = net.blob_by_name("label")->mutable_cpu_data();
  for (int i = 0; i < 4; ++i) labels[i] = static_cast<Dtype>(i % 5);
}

template <typename Dtype>
class NetGpuTest : public ::testing::Test {
 protected:
  void SetUp() override { DOPPIO_REQUIRE_GPU(); }
  NetParameter Param() {
    NetParameter param = ReadNetParamsFromTextString(kSmallNet, "small net");
    param.mutable_state()->set_phase(TRAIN);
    return param;
  }
};
TYPED_TEST_SUITE(NetGpuTest, TestDtypes);

TYPED_TEST(NetGpuTest, ForwardBackwardAndUpdateMatchTheCpu) {
  using Dtype = TypeParam;
  const double tol = 10 * GpuTolerance<Dtype>();  // a whole net accumulates rounding
  Net<Dtype> cpu(this->Param(), 5);
  Net<Dtype> gpu(this->Param(), 5, TestGpu());
  EXPECT_EQ(cpu.mode(), Mode::CPU);
  EXPECT_EQ(gpu.mode(), Mode::GPU);
  ASSERT_EQ(cpu.arena_count(), gpu.arena_count());
  // Same seed: same initial weights.
  ExpectClose(cpu.arena_data(), gpu.arena_data(), int(cpu.arena_count()), 0, "initial weights");
  for (int iter = 0; iter < 2; ++iter) {
    FillInputs(cpu);
    FillInputs(gpu);
    cpu.ClearParamDiffs();
    gpu.ClearParamDiffs();
    const Dtype cpu_loss = cpu.ForwardBackward();
    const Dtype gpu_loss = gpu.ForwardBackward();
    EXPECT_NEAR(cpu_loss, gpu_loss, tol * std::max<double>(1, std::fabs(cpu_loss)));
    EXPECT_EQ(cpu.blob_by_name("accuracy")->cpu_data()[0],
              gpu.blob_by_name("accuracy")->cpu_data()[0]);
    ExpectClose(cpu.arena_diff(), gpu.arena_diff(), int(cpu.arena_count()), tol, "gradients");
    cpu.Update();
    gpu.Update();
    ExpectClose(cpu.arena_data(), gpu.arena_data(), int(cpu.arena_count()), tol, "weights");
  }
}

TYPED_TEST(NetGpuTest, SwitchingDevicesKeepsTheResults) {
  using Dtype = TypeParam;
  Net<Dtype> net(this->Param(), 5);
  FillInputs(net);
  Dtype cpu_loss = 0;
  net.Forward(&cpu_loss);
  net.SetGpu(TestGpu());
  EXPECT_EQ(net.mode(), Mode::GPU);
  Dtype gpu_loss = 0;
  net.Forward(&gpu_loss);
  EXPECT_NEAR(cpu_loss, gpu_loss, 10 * GpuTolerance<Dtype>() * std::max<double>(1, cpu_loss));
  net.SetGpu(nullptr);
  EXPECT_EQ(net.mode(), Mode::CPU);
  Dtype back_loss = 0;
  net.Forward(&back_loss);
  EXPECT_NEAR(cpu_loss, back_loss, 10 * GpuTolerance<Dtype>() * std::max<double>(1, cpu_loss));
}

}  // namespace
}  // namespace doppio
