// Mixed precision on the CPU (precision BF16, docs/precision.md): each ONEDNN layer that runs
// bf16 against the CAFFE engine's fp32 twin (forward, bottom diffs, parameter gradients, after
// an update), and small nets in bf16 against the same nets in fp32, with the activations held
// in bf16 between the oneDNN layers. bf16 keeps 8 bits of mantissa: one rounding is within
// 2^-9 (0.2%) of the value, and a layer rounds its inputs, its weights and its output, so the
// layers are held to 3% of the larger of the value and the output's RMS. A net's loss is held
// to 2%, and its gradients to 15% of their norm: the small net below, with two BatchNorms, is
// sensitive enough that rounding only its input to bf16 (fp32 everywhere else) moved its
// gradients by 2-5%, and bf16 throughout by 0.1-8% (AMD EPYC with AVX512-BF16). On a CPU without
// AVX512-BF16 the same requests are errors that name the flag, which is what the tests then check.
#ifdef DOPPIO_WITH_ONEDNN

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>

#include "doppio/core/net.hpp"
#include "doppio/core/precision.hpp"
#include "doppio/layers/onednn_tensor.hpp"
#include "engine_comparison.hpp"
#include "expect_error.hpp"
#include "test_util.hpp"

namespace doppio {
namespace {

constexpr double kLayerTolerance = 3e-2;

// Skips a test where the CPU cannot run bf16, after checking that asking for it is an error
// that names what the CPU lacks.
#define SKIP_WITHOUT_BF16()                                                        \
  do {                                                                             \
    if (!OnednnBf16Missing().empty()) {                                            \
      EXPECT_ERROR_WITH(CheckPrecisionRuns(BF16, nullptr, "test"), "avx512_bf16"); \
      GTEST_SKIP() << "this CPU " << OnednnBf16Missing();                          \
    }                                                                              \
  } while (0)

void CompareBf16(const std::string& text, std::vector<std::vector<int>> bottoms, int tops = 1) {
  EngineComparison c{text, std::move(bottoms), tops, kLayerTolerance};
  c.precision = BF16;
  CompareEngines(c);
}

std::string Convolution(const std::string& fields) {
  return "type: 'Convolution' convolution_param { " + fields +
         " weight_filler { type: 'gaussian' std: 0.1 } engine: %ENGINE% }";
}

TEST(OnednnBf16Test, Convolution3x3) {
  SKIP_WITHOUT_BF16();
  CompareBf16(Convolution("num_output: 32 kernel_size: 3 pad: 1"), {{2, 16, 9, 9}});
}

TEST(OnednnBf16Test, ConvolutionStridedWithThreeInputChannels) {
  SKIP_WITHOUT_BF16();
  CompareBf16(Convolution("num_output: 16 kernel_size: 5 stride: 2"), {{2, 3, 15, 15}});
}

TEST(OnednnBf16Test, ConvolutionGroups) {
  SKIP_WITHOUT_BF16();
  CompareBf16(Convolution("num_output: 32 kernel_size: 3 group: 2 bias_term: false"),
              {{2, 32, 7, 7}});
}

TEST(OnednnBf16Test, InnerProduct) {
  SKIP_WITHOUT_BF16();
  CompareBf16("type: 'InnerProduct' inner_product_param { num_output: 24 engine: %ENGINE% }",
              {{4, 16, 3, 3}});
  CompareBf16(
      "type: 'InnerProduct' inner_product_param { num_output: 10 transpose: true "
      "engine: %ENGINE% }",
      {{8, 50}});
}

TEST(OnednnBf16Test, ReLU) {
  SKIP_WITHOUT_BF16();
  CompareBf16("type: 'ReLU' relu_param { engine: %ENGINE% }", {{2, 16, 5, 5}});
  CompareBf16("type: 'ReLU' relu_param { negative_slope: 0.1 engine: %ENGINE% }", {{3, 7, 5}});
}

TEST(OnednnBf16Test, Pooling) {
  SKIP_WITHOUT_BF16();
  CompareBf16(
      "type: 'Pooling' pooling_param { pool: MAX kernel_size: 3 stride: 2 "
      "engine: %ENGINE% }",
      {{2, 16, 13, 13}});
  CompareBf16(
      "type: 'Pooling' pooling_param { pool: AVE kernel_size: 3 stride: 2 "
      "engine: %ENGINE% }",
      {{2, 16, 8, 8}});
}

TEST(OnednnBf16Test, LRN) {
  SKIP_WITHOUT_BF16();
  CompareBf16("type: 'LRN' lrn_param { local_size: 5 alpha: 0.0001 beta: 0.75 engine: %ENGINE% }",
              {{2, 32, 6, 6}});
}

TEST(OnednnBf16Test, EltwiseSum) {
  SKIP_WITHOUT_BF16();
  CompareBf16("type: 'Eltwise' eltwise_param { engine: %ENGINE% }", {{2, 16, 4, 4}, {2, 16, 4, 4}});
}

TEST(OnednnBf16Test, LayersWithoutBf16RunFp32) {
  // Asked for BF16 through the net, a layer whose engine has no bf16 runs fp32 (the losses and
  // Softmax are not even asked: RequestedPrecision).
  auto caffe = LayerRegistry<float>::CreateLayer(
      EngineParam("type: 'Convolution' convolution_param { num_output: 4 kernel_size: 1 "
                  "engine: %ENGINE% }",
                  "CAFFE"),
      Mode::CPU);
  caffe->set_precision_request(BF16);
  Blob<float> bottom({1, 2, 3, 3}), top;
  caffe->SetUp({&bottom}, {&top});
  EXPECT_EQ(caffe->precision().math, FP32);
  EXPECT_EQ(DescribePrecision(caffe->precision()), "fp32");
}

// A CIFAR10-quick-like net and a ResNet bottleneck: convolutions, BatchNorm + Scale + ReLU,
// pooling, the shortcut's Eltwise SUM + ReLU, an inner product and the loss.
const char* kNet = R"(
  force_backward: true
  layer { name: 'data' type: 'Input' top: 'data' top: 'label'
          input_param { shape { dim: 8 dim: 3 dim: 12 dim: 12 } shape { dim: 8 } } }
  layer { name: 'conv1' type: 'Convolution' bottom: 'data' top: 'conv1'
          convolution_param { num_output: 32 kernel_size: 3 pad: 1
                              weight_filler { type: 'gaussian' std: 0.2 } } }
  layer { name: 'bn1' type: 'BatchNorm' bottom: 'conv1' top: 'conv1' }
  layer { name: 'scale1' type: 'Scale' bottom: 'conv1' top: 'conv1'
          scale_param { bias_term: true } }
  layer { name: 'relu1' type: 'ReLU' bottom: 'conv1' top: 'conv1' }
  layer { name: 'pool1' type: 'Pooling' bottom: 'conv1' top: 'pool1'
          pooling_param { pool: MAX kernel_size: 2 stride: 2 } }
  layer { name: 'conv2' type: 'Convolution' bottom: 'pool1' top: 'conv2'
          convolution_param { num_output: 32 kernel_size: 3 pad: 1
                              weight_filler { type: 'gaussian' std: 0.1 } } }
  layer { name: 'bn2' type: 'BatchNorm' bottom: 'conv2' top: 'conv2' }
  layer { name: 'scale2' type: 'Scale' bottom: 'conv2' top: 'conv2'
          scale_param { bias_term: true } }
  layer { name: 'sum' type: 'Eltwise' bottom: 'pool1' bottom: 'conv2' top: 'sum' }
  layer { name: 'relu2' type: 'ReLU' bottom: 'sum' top: 'sum' }
  layer { name: 'norm' type: 'LRN' bottom: 'sum' top: 'norm' lrn_param { local_size: 5 } }
  layer { name: 'pool2' type: 'Pooling' bottom: 'norm' top: 'pool2'
          pooling_param { pool: AVE kernel_size: 3 stride: 2 } }
  layer { name: 'ip' type: 'InnerProduct' bottom: 'pool2' top: 'ip'
          inner_product_param { num_output: 5 weight_filler { type: 'gaussian' std: 0.1 } } }
  layer { name: 'loss' type: 'SoftmaxWithLoss' bottom: 'ip' bottom: 'label' top: 'loss' }
)";

// The RMS of got - want over `rms`, the scale it is measured against.
double RelativeError(const float* got, const float* want, int count, double rms) {
  double sum = 0;
  for (int i = 0; i < count; ++i) sum += (double(got[i]) - want[i]) * (double(got[i]) - want[i]);
  const double error = std::sqrt(sum / count) / rms;
  return error;
}

std::unique_ptr<Net<float>> MakeNet(Precision precision) {
  NetParameter param = ParseText<NetParameter>(kNet);
  param.mutable_state()->set_phase(TRAIN);
  param.set_precision(precision);
  return std::make_unique<Net<float>>(param, 1701);
}

TEST(OnednnBf16NetTest, TrainsWhatFp32TrainsWithBf16ActivationsBetweenOnednnLayers) {
  SKIP_WITHOUT_BF16();
  auto fp32 = MakeNet(FP32);
  auto bf16 = MakeNet(BF16);
  Rng rng(29);
  FillGaussian(fp32->blob_by_name("data").get(), rng);
  Blob<float>& label = *fp32->blob_by_name("label");
  for (int i = 0; i < label.count(); ++i) label.mutable_cpu_data()[i] = static_cast<float>(i % 5);
  bf16->blob_by_name("data")->CopyFrom(*fp32->blob_by_name("data"));
  bf16->blob_by_name("label")->CopyFrom(label);
  ASSERT_EQ(fp32->learnable_params().size(), bf16->learnable_params().size());
  for (std::size_t p = 0; p < fp32->learnable_params().size(); ++p) {
    bf16->learnable_params()[p]->CopyFrom(*fp32->learnable_params()[p]);
  }
  // Every layer that has bf16 runs it; the loss, which needs the range, stays fp32.
  for (const char* name : {"conv1", "bn1", "pool1", "conv2", "sum", "norm", "pool2", "ip"}) {
    EXPECT_EQ(bf16->layer_by_name(name)->precision().math, BF16) << name;
    EXPECT_EQ(fp32->layer_by_name(name)->precision().math, FP32) << name;
  }
  EXPECT_EQ(bf16->layer_by_name("loss")->precision().math, FP32);
  // The parameters stay fp32 in the arena: the same values in both nets.
  for (std::size_t p = 0; p < fp32->learnable_params().size(); ++p) {
    EXPECT_EQ(bf16->learnable_params()[p]->cpu_data()[0],
              fp32->learnable_params()[p]->cpu_data()[0]);
  }

  float loss[2];
  fp32->Forward(&loss[0]);
  bf16->Forward(&loss[1]);
  // Between oneDNN layers the activations are bf16 (half the bytes), not f32 under a new name.
  for (const char* name : {"pool1", "sum", "norm"}) {
    const OnednnLayout* held = OnednnLayoutOf(*bf16->blob_by_name(name)->data());
    ASSERT_NE(held, nullptr) << name;
    EXPECT_EQ(held->desc().data_type(), dnnl::memory::data_type::bf16) << name;
  }
  EXPECT_NEAR(loss[1], loss[0], 2e-2 * loss[0]);
  fp32->Backward();
  bf16->Backward();
  // As wholes (the norm of the difference against the norm of the fp32 values): a MAX pooling
  // sends an element's gradient elsewhere where bf16 rounds two window values to one, so single
  // elements may differ by their whole size. Where a gradient sums to zero in exact arithmetic
  // (conv2's bias, which feeds a BatchNorm), against the net's largest gradient instead. The
  // bound: twice the largest difference measured (file comment).
  double scale = 0;
  for (const Blob<float>* param : fp32->learnable_params()) {
    scale = std::max(scale, RootMeanSquare(param->cpu_diff(), param->count()));
  }
  for (std::size_t p = 0; p < fp32->learnable_params().size(); ++p) {
    const Blob<float>& want = *fp32->learnable_params()[p];
    const Blob<float>& got = *bf16->learnable_params()[p];
    const double floor = std::max(RootMeanSquare(want.cpu_diff(), want.count()), 0.05 * scale);
    EXPECT_LT(RelativeError(got.cpu_diff(), want.cpu_diff(), want.count(), floor), 0.15)
        << "gradient of learnable blob " << p;
  }
  const Blob<float>& data = *fp32->blob_by_name("data");
  EXPECT_LT(RelativeError(bf16->blob_by_name("data")->cpu_diff(), data.cpu_diff(), data.count(),
                          RootMeanSquare(data.cpu_diff(), data.count())),
            0.15);
}

TEST(OnednnBf16NetTest, LayerThatNamesBf16OnAnEngineWithoutItIsAnError) {
  SKIP_WITHOUT_BF16();
  NetParameter param = ParseText<NetParameter>(R"(
    layer { name: 'data' type: 'Input' top: 'data'
            input_param { shape { dim: 1 dim: 2 dim: 4 dim: 4 } } }
    layer { name: 'conv' type: 'Convolution' bottom: 'data' top: 'conv' precision: BF16
            convolution_param { num_output: 4 kernel_size: 1 engine: CAFFE } }
  )");
  EXPECT_ERROR_WITH(Net<float>{param}, "'conv'", "bf16", "ONEDNN");
}

TEST(OnednnBf16NetTest, CheapLayersAfterFp32LayersRunFp32) {
  SKIP_WITHOUT_BF16();
  // LeNet's shape: its convolutions stay on CAFFE, so its poolings read fp32 (and would convert
  // both ways); the inner products still run bf16. A pooling that names bf16 keeps it.
  NetParameter param = ParseText<NetParameter>(R"(
    precision: BF16
    layer { name: 'data' type: 'Input' top: 'data'
            input_param { shape { dim: 2 dim: 1 dim: 12 dim: 12 } } }
    layer { name: 'conv' type: 'Convolution' bottom: 'data' top: 'conv'
            convolution_param { num_output: 20 kernel_size: 5 } }
    layer { name: 'pool' type: 'Pooling' bottom: 'conv' top: 'pool'
            pooling_param { pool: MAX kernel_size: 2 stride: 2 } }
    layer { name: 'named' type: 'Pooling' bottom: 'conv' top: 'named' precision: BF16
            pooling_param { pool: MAX kernel_size: 2 stride: 2 } }
    layer { name: 'ip' type: 'InnerProduct' bottom: 'pool' top: 'ip'
            inner_product_param { num_output: 16 } }
    layer { name: 'relu' type: 'ReLU' bottom: 'ip' top: 'relu' }
    layer { name: 'relu_named' type: 'ReLU' bottom: 'named' top: 'relu_named' }
  )");
  Net<float> net(param);
  EXPECT_EQ(net.layer_by_name("conv")->engine(), "CAFFE");
  EXPECT_EQ(net.layer_by_name("pool")->precision().math, FP32);
  EXPECT_EQ(net.layer_by_name("named")->precision().math, BF16);
  EXPECT_EQ(net.layer_by_name("ip")->precision().math, BF16);
  // The inner product's output is fp32; the pooling that named bf16 hands on bf16.
  EXPECT_EQ(net.layer_by_name("relu")->precision().math, FP32);
  EXPECT_EQ(net.layer_by_name("relu_named")->precision().math, BF16);
}

TEST(OnednnBf16NetTest, LayerCanStayFp32InABf16Net) {
  SKIP_WITHOUT_BF16();
  NetParameter param = ParseText<NetParameter>(kNet);
  for (LayerParameter& layer : *param.mutable_layer()) {
    if (layer.name() == "conv2") layer.set_precision(FP32);
  }
  param.set_precision(BF16);
  Net<float> net(param, 1701);
  EXPECT_EQ(net.layer_by_name("conv1")->precision().math, BF16);
  EXPECT_EQ(net.layer_by_name("conv2")->precision().math, FP32);
}

}  // namespace
}  // namespace doppio

#endif  // DOPPIO_WITH_ONEDNN
