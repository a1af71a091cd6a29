// The ONEDNN InnerProduct, ReLU, Pooling, LRN, Softmax, Concat and Eltwise SUM against the
// CAFFE ones on the shapes of Caffe's published nets (forward, bottom diff, parameter
// gradients; 1e-4 relative, as engine_comparison.hpp defines it, 1e-6 where no sum is
// reordered), gradients against finite differences, and what stays on the CAFFE kernels.
// Float throughout. About 2 s.
#ifdef DOPPIO_WITH_ONEDNN

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "doppio/layers/onednn_tensor.hpp"
#include "doppio/layers/softmax_loss_layer.hpp"
#include "doppio/util/math_functions.hpp"
#include "doppio/util/thread_pool.hpp"
#include "engine_comparison.hpp"
#include "gradient_checker.hpp"
#include "test_util.hpp"

namespace doppio {
namespace {

std::string InnerProduct(const std::string& fields) {
  return "type: 'InnerProduct' inner_product_param { " + fields + " engine: %ENGINE% }";
}
std::string Pool(const std::string& fields) {
  return "type: 'Pooling' pooling_param { " + fields + " engine: %ENGINE% }";
}
std::string Lrn(const std::string& fields) {
  return "type: 'LRN' lrn_param { " + fields + " engine: %ENGINE% }";
}
std::string Relu(const std::string& fields) {
  return "type: 'ReLU' relu_param { " + fields + " engine: %ENGINE% }";
}

std::string Softmax(const std::string& fields) {
  return "type: 'Softmax' softmax_param { " + fields + " engine: %ENGINE% }";
}
std::string Concat(const std::string& fields) {
  return "type: 'Concat' concat_param { " + fields + " engine: %ENGINE% }";
}
std::string Eltwise(const std::string& fields) {
  return "type: 'Eltwise' eltwise_param { " + fields + " engine: %ENGINE% }";
}

std::shared_ptr<Layer<float>> Onednn(const std::string& text) {
  auto layer = LayerRegistry<float>::CreateLayer(EngineParam(text, "ONEDNN"), Mode::CPU);
  EXPECT_EQ(layer->engine(), "ONEDNN");
  return layer;
}

TEST(OnednnInnerProductTest, AlexNetFc6FromConvolutionOutput) {
  CompareEngines({InnerProduct("num_output: 64"), {{4, 16, 6, 6}}});
}

TEST(OnednnInnerProductTest, LeNetIp2NoBias) {
  CompareEngines({InnerProduct("num_output: 10 bias_term: false"), {{8, 50}}});
}

TEST(OnednnInnerProductTest, TransposedWeights) {
  CompareEngines({InnerProduct("num_output: 12 transpose: true"), {{3, 20}}});
}

TEST(OnednnInnerProductTest, Gradient) {
  Rng rng(7);
  Blob<float> bottom({3, 2, 2, 2}), top;
  FillGaussian(&bottom, rng);
  LayerParameter param =
      EngineParam(InnerProduct("num_output: 4 weight_filler { type: 'gaussian' } "
                               "bias_filler { type: 'gaussian' }"),
                  "ONEDNN");
  auto layer = LayerRegistry<float>::CreateLayer(param, Mode::CPU);
  GradientChecker<float> checker(1e-2, 1e-2);
  checker.CheckGradientExhaustive(layer.get(), {&bottom}, {&top});
}

TEST(OnednnReLUTest, Plain) { CompareEngines({Relu(""), {{2, 8, 7, 5}}}); }

TEST(OnednnReLUTest, NegativeSlope) {
  CompareEngines({Relu("negative_slope: 0.1"), {{2, 8, 7, 5}}});
}

TEST(OnednnReLUTest, NegativeSlopeBelowZero) {
  CompareEngines({Relu("negative_slope: -0.5"), {{3, 10}}});
}

// In place, the gradient comes from the output (slope >= 0) or a kept input (slope < 0).
TEST(OnednnReLUTest, InPlaceMatchesCaffe) {
  for (const char* slope : {"0", "0.2", "-0.3"}) {
    const std::string text = Relu(std::string("negative_slope: ") + slope);
    Rng rng(11);
    Blob<float> blob[2];
    std::shared_ptr<Layer<float>> layer[2] = {
        LayerRegistry<float>::CreateLayer(EngineParam(text, "CAFFE"), Mode::CPU), Onednn(text)};
    blob[0].Reshape({4, 6});
    FillGaussian(&blob[0], rng);
    blob[1].CopyFrom(blob[0], false, true);
    for (int e = 0; e < 2; ++e) {
      layer[e]->SetUp({&blob[e]}, {&blob[e]});
      layer[e]->Forward({&blob[e]}, {&blob[e]});
    }
    rng_gaussian<float>(blob[0].count(), 0.f, 1.f, rng, blob[0].mutable_cpu_diff());
    blob[1].CopyFrom(blob[0], true);
    for (int e = 0; e < 2; ++e) layer[e]->Backward({&blob[e]}, {true}, {&blob[e]});
    ExpectClose(blob[1].cpu_data(), blob[0].cpu_data(), blob[0].count(), 1e-6, "data");
    ExpectClose(blob[1].cpu_diff(), blob[0].cpu_diff(), blob[0].count(), 1e-6, "diff");
  }
}

// Not in place, the gradient comes from the input, as the CAFFE engine's: a later layer may
// change the top in place (Scale by -3 here flips its signs) before Backward runs.
TEST(OnednnReLUTest, NotInPlaceIgnoresChangesToTheTop) {
  const std::string text = Relu("");
  Rng rng(13);
  Blob<float> bottom[2], top[2];
  std::shared_ptr<Layer<float>> layer[2] = {
      LayerRegistry<float>::CreateLayer(EngineParam(text, "CAFFE"), Mode::CPU), Onednn(text)};
  bottom[0].Reshape({4, 6});
  FillGaussian(&bottom[0], rng);
  bottom[1].CopyFrom(bottom[0], false, true);
  for (int e = 0; e < 2; ++e) {
    layer[e]->SetUp({&bottom[e]}, {&top[e]});
    layer[e]->Forward({&bottom[e]}, {&top[e]});
    cpu_scal(top[e].count(), -3.f, top[e].mutable_cpu_data());
  }
  rng_gaussian<float>(top[0].count(), 0.f, 1.f, rng, top[0].mutable_cpu_diff());
  top[1].CopyFrom(top[0], true);
  for (int e = 0; e < 2; ++e) layer[e]->Backward({&top[e]}, {true}, {&bottom[e]});
  ExpectClose(bottom[1].cpu_diff(), bottom[0].cpu_diff(), bottom[0].count(), 1e-6, "diff");
}

TEST(OnednnPoolingTest, AlexNetMax3Stride2Ceil) {
  // 55 -> 27, 27 -> 13, 13 -> 6: ceil mode adds the last, partial window.
  CompareEngines({Pool("pool: MAX kernel_size: 3 stride: 2"), {{2, 4, 13, 13}}});
}

TEST(OnednnPoolingTest, GoogLeNetMaxPaddedStride1) {
  CompareEngines({Pool("pool: MAX kernel_size: 3 stride: 1 pad: 1"), {{2, 4, 7, 7}}});
}

TEST(OnednnPoolingTest, GoogLeNetMax3Stride2On112Ceil) {
  CompareEngines({Pool("pool: MAX kernel_size: 3 stride: 2"), {{1, 3, 112, 112}}});
}

TEST(OnednnPoolingTest, GoogLeNetAuxAve5Stride3) {
  CompareEngines({Pool("pool: AVE kernel_size: 5 stride: 3"), {{2, 4, 14, 14}}});
}

TEST(OnednnPoolingTest, GlobalAve7x7) {
  CompareEngines({Pool("pool: AVE global_pooling: true"), {{2, 8, 7, 7}}});
}

TEST(OnednnPoolingTest, CifarAve3Stride2CeilOverhang) {
  // 16 -> 8: the last window hangs over the image's edge; Caffe divides by its part inside.
  CompareEngines({Pool("pool: AVE kernel_size: 3 stride: 2"), {{2, 4, 16, 16}}});
}

TEST(OnednnPoolingTest, AvePaddedNoOverhang) {
  CompareEngines({Pool("pool: AVE kernel_size: 3 stride: 1 pad: 1"), {{2, 3, 6, 5}}});
}

TEST(OnednnPoolingTest, AvePaddedWithOverhangKeepsCaffeDivisor) {
  CompareEngines({Pool("pool: AVE kernel_size: 3 stride: 2 pad: 1"), {{2, 3, 14, 9}}});
}

TEST(OnednnPoolingTest, FloorMode) {
  CompareEngines({Pool("pool: MAX kernel_size: 2 stride: 3 round_mode: FLOOR"), {{2, 3, 8, 7}}});
}

TEST(OnednnPoolingTest, RectangularPaddedMax) {
  CompareEngines(
      {Pool("pool: MAX kernel_h: 3 kernel_w: 2 stride_h: 2 stride_w: 1 pad_h: 1 pad_w: 1"),
       {{2, 3, 9, 6}}});
}

// Max pooling of an input with NaNs at `nans` gives CAFFE's output and bottom diff (oneDNN's
// kernels would pass a NaN on where Caffe's comparison skips it).
void ExpectMaxPoolsNaNLikeCaffe(const std::vector<int>& shape, const std::vector<int>& nans) {
  const std::string text = Pool("pool: MAX kernel_size: 3 stride: 2");
  Blob<float> bottom[2], top[2];
  std::shared_ptr<Layer<float>> layer[2] = {
      LayerRegistry<float>::CreateLayer(EngineParam(text, "CAFFE"), Mode::CPU), Onednn(text)};
  Rng rng(13);
  bottom[0].Reshape(shape);
  FillGaussian(&bottom[0], rng);
  float* in = bottom[0].mutable_cpu_data();
  for (int index : nans) in[index] = std::numeric_limits<float>::quiet_NaN();
  bottom[1].CopyFrom(bottom[0], false, true);
  for (int e = 0; e < 2; ++e) {
    layer[e]->SetUp({&bottom[e]}, {&top[e]});
    layer[e]->Forward({&bottom[e]}, {&top[e]});
  }
  rng_gaussian<float>(top[0].count(), 0.f, 1.f, rng, top[0].mutable_cpu_diff());
  top[1].CopyFrom(top[0], true);
  for (int e = 0; e < 2; ++e) layer[e]->Backward({&top[e]}, {true}, {&bottom[e]});
  int nan_outputs = 0;
  for (int i = 0; i < top[0].count(); ++i) {
    const float want = top[0].cpu_data()[i], got = top[1].cpu_data()[i];
    nan_outputs += std::isnan(want);
    EXPECT_EQ(std::isnan(got), std::isnan(want)) << "output " << i;
    if (!std::isnan(want)) EXPECT_EQ(got, want) << "output " << i;
  }
  EXPECT_GT(nan_outputs, 0);
  for (int i = 0; i < bottom[0].count(); ++i) {
    EXPECT_EQ(bottom[1].cpu_diff()[i], bottom[0].cpu_diff()[i]) << "bottom diff " << i;
  }
}

TEST(OnednnPoolingTest, MaxPropagatesNaNLikeCaffe) {
  ExpectMaxPoolsNaNLikeCaffe({1, 2, 9, 9}, {10, 11, 40, 89 + 17});
}

TEST(OnednnPoolingTest, MaxFindsNaNInAnyThreadsPart) {
  // Large enough that two threads scan for NaNs in two parts; the NaN lies in the second.
  ThreadPool pool(2);
  ThreadPool::Scope use(&pool);
  ExpectMaxPoolsNaNLikeCaffe({2, 16, 64, 64}, {2 * 16 * 64 * 64 - 64 * 5 - 7});
}

TEST(OnednnPoolingTest, MaskTopAndStochasticAreRefusedByName) {
  ExpectError([] { Onednn("top: 'out' top: 'mask' " + Pool("pool: MAX kernel_size: 2")); },
              {"layer 'l' (Pooling)", "engine ONEDNN", "mask"});
  ExpectError([] { Onednn(Pool("pool: STOCHASTIC kernel_size: 2")); },
              {"layer 'l' (Pooling)", "engine ONEDNN", "stochastic"});
}

TEST(OnednnPoolingTest, GradientAvePadded) {
  Rng rng(17);
  Blob<float> bottom({1, 2, 5, 5}), top;
  FillGaussian(&bottom, rng);
  auto layer = Onednn(Pool("pool: AVE kernel_size: 3 stride: 2 pad: 1"));
  GradientChecker<float> checker(1e-2, 1e-2);
  checker.CheckGradientExhaustive(layer.get(), {&bottom}, {&top});
}

TEST(OnednnLRNTest, AlexNetAcrossChannels5) {
  CompareEngines({Lrn("local_size: 5 alpha: 0.0001 beta: 0.75"), {{2, 12, 9, 9}}});
}

TEST(OnednnLRNTest, AcrossChannels3LargeAlpha) {
  CompareEngines({Lrn("local_size: 3 alpha: 0.5 beta: 0.6 k: 2"), {{2, 7, 5, 4}}});
}

TEST(OnednnLRNTest, CifarFullWithinChannel3) {
  CompareEngines(
      {Lrn("local_size: 3 alpha: 0.00005 beta: 0.75 norm_region: WITHIN_CHANNEL"), {{2, 4, 8, 8}}});
}

TEST(OnednnLRNTest, WithinChannel5LargeAlpha) {
  CompareEngines(
      {Lrn("local_size: 5 alpha: 0.8 beta: 0.75 norm_region: WITHIN_CHANNEL"), {{1, 3, 7, 6}}});
}

TEST(OnednnLRNTest, WithinChannel7WithoutJitKernel) {
  CompareEngines(
      {Lrn("local_size: 7 alpha: 0.5 beta: 0.75 norm_region: WITHIN_CHANNEL"), {{1, 3, 9, 8}}});
}

TEST(OnednnLRNTest, CaffeLayoutInputRunsBlocked) {
  // Input in Caffe's layout, 32 channels (a blocked layout fits the blob): the layer reorders
  // it into a layout with jit kernels and leaves its output there; results as CAFFE's.
  CompareEngines({Lrn("local_size: 5 alpha: 0.0001 beta: 0.75"), {{2, 32, 6, 6}}});
  Rng rng(23);
  Blob<float> bottom({2, 32, 6, 6}), top;
  FillGaussian(&bottom, rng);
  auto layer = Onednn(Lrn("local_size: 5 alpha: 0.0001 beta: 0.75"));
  layer->SetUp({&bottom}, {&top});
  layer->Forward({&bottom}, {&top});
  const OnednnLayout* held = OnednnLayoutOf(*top.data());
  ASSERT_NE(held, nullptr);
  EXPECT_NE(held->desc(), OnednnPlainDesc({2, 32, 6, 6}));
}

TEST(OnednnLRNTest, GradientAcross) {
  Rng rng(19);
  Blob<float> bottom({2, 7, 3, 3}), top;
  FillGaussian(&bottom, rng);
  auto layer = Onednn(Lrn("local_size: 5 alpha: 1 beta: 0.75"));
  GradientChecker<float> checker(1e-2, 1e-2);
  checker.CheckGradientExhaustive(layer.get(), {&bottom}, {&top});
}

TEST(OnednnSoftmaxTest, ClassifierOutput) {
  // GoogLeNet's and AlexNet's prob: 1000 classes (here 100) per image.
  CompareEngines({Softmax(""), {{4, 100}}});
}

TEST(OnednnSoftmaxTest, ChannelsOfAnImage) { CompareEngines({Softmax(""), {{2, 10, 3, 4}}}); }

TEST(OnednnSoftmaxTest, OtherAxes) {
  CompareEngines({Softmax("axis: 2"), {{2, 3, 7, 4}}});
  CompareEngines({Softmax("axis: -1"), {{3, 2, 5}}});
  CompareEngines({Softmax("axis: 0"), {{6, 4}}});
}

TEST(OnednnSoftmaxTest, InPlaceMatchesCaffe) {
  const std::string text = Softmax("");
  Rng rng(37);
  Blob<float> blob[2];
  std::shared_ptr<Layer<float>> layer[2] = {
      LayerRegistry<float>::CreateLayer(EngineParam(text, "CAFFE"), Mode::CPU), Onednn(text)};
  blob[0].Reshape({3, 7, 2});
  FillGaussian(&blob[0], rng, 0.f, 3.f);
  blob[1].CopyFrom(blob[0], false, true);
  for (int e = 0; e < 2; ++e) {
    layer[e]->SetUp({&blob[e]}, {&blob[e]});
    layer[e]->Forward({&blob[e]}, {&blob[e]});
  }
  rng_gaussian<float>(blob[0].count(), 0.f, 1.f, rng, blob[0].mutable_cpu_diff());
  blob[1].CopyFrom(blob[0], true);
  for (int e = 0; e < 2; ++e) layer[e]->Backward({&blob[e]}, {true}, {&blob[e]});
  ExpectClose(blob[1].cpu_data(), blob[0].cpu_data(), blob[0].count(), 1e-5, "data");
  ExpectClose(blob[1].cpu_diff(), blob[0].cpu_diff(), blob[0].count(), 1e-4, "diff");
}

TEST(OnednnSoftmaxTest, Gradient) {
  Rng rng(41);
  Blob<float> bottom({2, 5, 2, 2}), top;
  FillGaussian(&bottom, rng);
  auto layer = Onednn(Softmax(""));
  GradientChecker<float> checker(1e-2, 1e-3);
  checker.CheckGradientExhaustive(layer.get(), {&bottom}, {&top});
}

// SoftmaxWithLoss computes its probabilities with a Softmax of the CPU's default engine,
// ONEDNN, unless its softmax_param asks for CAFFE: the loss, the probabilities and the
// predictions' gradient agree, over classes and over a spatial map of classes.
TEST(OnednnSoftmaxWithLossTest, DefaultSoftmaxIsOnednnAndMatchesCaffe) {
  const std::vector<std::vector<int>> shapes[] = {{{4, 10}, {4}}, {{2, 5, 3, 4}, {2, 3, 4}}};
  for (const auto& shape : shapes) {
    Rng rng(43);
    Blob<float> predictions[2], labels[2], loss[2], prob[2];
    predictions[0].Reshape(shape[0]);
    labels[0].Reshape(shape[1]);
    FillGaussian(&predictions[0], rng, 0.f, 3.f);
    for (int i = 0; i < labels[0].count(); ++i) {
      labels[0].mutable_cpu_data()[i] = static_cast<float>(rng.Below(shape[0][1]));
    }
    predictions[1].CopyFrom(predictions[0], false, true);
    labels[1].CopyFrom(labels[0], false, true);
    const std::string engines[2] = {"softmax_param { engine: CAFFE }", ""};
    const std::string inner[2] = {"CAFFE", "ONEDNN"};
    std::shared_ptr<Layer<float>> layer[2];
    for (int e = 0; e < 2; ++e) {
      layer[e] = LayerRegistry<float>::CreateLayer(
          ParseText<LayerParameter>("name: 'loss' type: 'SoftmaxWithLoss' " + engines[e]),
          Mode::CPU);
      const std::vector<Blob<float>*> bottom = {&predictions[e], &labels[e]};
      const std::vector<Blob<float>*> top = {&loss[e], &prob[e]};
      layer[e]->SetUp(bottom, top);
      EXPECT_EQ(
          dynamic_cast<const SoftmaxWithLossLayer<float>&>(*layer[e]).softmax_layer().engine(),
          inner[e]);
      layer[e]->Forward(bottom, top);
      layer[e]->Backward(top, {true, false}, bottom);
    }
    ExpectClose(loss[1].cpu_data(), loss[0].cpu_data(), 1, 1e-6, "loss");
    ExpectClose(prob[1].cpu_data(), prob[0].cpu_data(), prob[0].count(), 1e-6, "probabilities");
    ExpectClose(predictions[1].cpu_diff(), predictions[0].cpu_diff(), predictions[0].count(), 1e-6,
                "predictions' diff");
  }
}

TEST(OnednnConcatTest, GoogLeNetInceptionOutput) {
  // inception_3a/output: 64 + 128 + 32 + 32 channels (here 8 + 12 + 4 + 4) of 28x28 (7x7).
  CompareEngines({Concat(""), {{2, 8, 7, 7}, {2, 12, 7, 7}, {2, 4, 7, 7}, {2, 4, 7, 7}}, 1, 1e-6});
}

TEST(OnednnConcatTest, OtherAxesAndAnEmptyBottom) {
  CompareEngines({Concat("axis: 0"), {{2, 3, 4}, {5, 3, 4}}, 1, 1e-6});
  CompareEngines({Concat("axis: -1"), {{2, 3, 4}, {2, 3, 1}, {2, 3, 6}}, 1, 1e-6});
  CompareEngines({Concat("concat_dim: 1"), {{2, 3, 4}, {2, 0, 4}, {2, 2, 4}}, 1, 1e-6});
}

TEST(OnednnConcatTest, OneBottomPassesThrough) { CompareEngines({Concat(""), {{2, 3, 4}}, 1, 0}); }

TEST(OnednnConcatTest, Gradient) {
  Rng rng(43);
  Blob<float> a({2, 3, 2, 2}), b({2, 2, 2, 2}), top;
  FillGaussian(&a, rng);
  FillGaussian(&b, rng);
  auto layer = Onednn(Concat(""));
  GradientChecker<float> checker(1e-2, 1e-3);
  checker.CheckGradientExhaustive(layer.get(), {&a, &b}, {&top});
}

TEST(OnednnEltwiseTest, ResNet50ShortcutSum) {
  CompareEngines({Eltwise("operation: SUM"), {{2, 16, 7, 7}, {2, 16, 7, 7}}, 1, 1e-6});
}

TEST(OnednnEltwiseTest, SumWithCoefficients) {
  CompareEngines({Eltwise("operation: SUM coeff: 0.5 coeff: -2 coeff: 3"),
                  {{3, 4, 5}, {3, 4, 5}, {3, 4, 5}},
                  1,
                  1e-5});
}

TEST(OnednnEltwiseTest, ProdAndMaxAreRefusedByNameAndStayOnCaffe) {
  for (const char* op : {"PROD", "MAX"}) {
    const std::string text = Eltwise(std::string("operation: ") + op);
    ExpectError([&] { Onednn(text); }, {"layer 'l' (Eltwise)", "engine ONEDNN", "SUM only"});
    EXPECT_EQ(LayerRegistry<float>::ChooseEngine(EngineParam(text, "DEFAULT"), Mode::CPU), "CAFFE");
  }
}

TEST(OnednnEltwiseTest, Gradient) {
  Rng rng(47);
  Blob<float> a({2, 3, 2}), b({2, 3, 2}), top;
  FillGaussian(&a, rng);
  FillGaussian(&b, rng);
  auto layer = Onednn(Eltwise("operation: SUM coeff: 1.5 coeff: -0.5"));
  GradientChecker<float> checker(1e-2, 1e-3);
  checker.CheckGradientExhaustive(layer.get(), {&a, &b}, {&top});
}

}  // namespace
}  // namespace doppio

#endif  // DOPPIO_WITH_ONEDNN
