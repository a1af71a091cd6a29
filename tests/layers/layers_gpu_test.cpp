// Every layer on the GPU against the same layer on the CPU: forward values, running state,
// bottom and parameter gradients (all diffs start non-zero, so accumulation is seen),
// to 1e-4 relative in float32 (TF32 off); and a finite-difference gradient check with the
// layer running on the GPU. The default engine on the GPU is cuDNN where it applies; the
// CAFFE engine's kernels are run by the cases that force it. Skipped without a device.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>
#include <ostream>
#include <string>
#include <vector>

#include "doppio/core/layer_registry.hpp"
#include "gpu_test_util.hpp"
#include "gradient_checker.hpp"
#include "test_util.hpp"

namespace doppio {
namespace {

enum class Fill {
  kGaussian,  // N(0, 1)
  kUniform,   // U(a, b)
  kLabels,    // integers in [0, a)
  kDistinct,  // a shuffled grid 0.1 apart, shifted by a: no ties, no kinks within a step
};

struct BottomSpec {
  std::vector<int> shape;
  Fill fill = Fill::kGaussian;
  double a = 0;
  double b = 1;
  bool propagate = true;
};

enum class Check { kNone, kAll, kBottom0, kParamsOnly, kBottoms01 };

struct LayerCase {
  std::string name;
  std::string param;  // LayerParameter text
  std::vector<BottomSpec> bottoms;
  int tops = 1;
  bool in_place = false;
  bool backward = true;
  bool loss = false;  // the top diff holds the loss weight: keep it
  Check check = Check::kAll;
  double kink = 0;
  double kink_range = -1;
  bool randomize_params = false;  // fill parameters with U(0.5, 1.5) (BatchNorm statistics)
  std::string engine;             // "" (the default) or "CAFFE"
  int objective_top = -1;         // the top whose squares the gradient check sums (-1: all)

  LayerCase& InPlace() {
    in_place = true;
    return *this;
  }
  LayerCase& NoBackward() {
    backward = false;
    check = Check::kNone;
    return *this;
  }
  LayerCase& Loss() {
    loss = true;
    return *this;
  }
  LayerCase& Checks(Check c) {
    check = c;
    return *this;
  }
  LayerCase& Kink(double at, double range) {
    kink = at;
    kink_range = range;
    return *this;
  }
  LayerCase& Tops(int n) {
    tops = n;
    return *this;
  }
  LayerCase& RandomParams() {
    randomize_params = true;
    return *this;
  }
  LayerCase& Engine(const std::string& e) {
    engine = e;
    return *this;
  }
  LayerCase& ObjectiveTop(int top) {
    objective_top = top;
    return *this;
  }
};

// gtest prints a parameter in test names and failures: the case's name says it all.
void PrintTo(const LayerCase& c, std::ostream* os) { *os << c.name; }

BottomSpec Gaussian(std::vector<int> shape) { return BottomSpec{std::move(shape)}; }
BottomSpec Uniform(std::vector<int> shape, double a, double b) {
  return BottomSpec{std::move(shape), Fill::kUniform, a, b};
}
BottomSpec Labels(std::vector<int> shape, int classes) {
  return BottomSpec{std::move(shape), Fill::kLabels, double(classes), 0, false};
}
BottomSpec Distinct(std::vector<int> shape, double shift = 0) {
  return BottomSpec{std::move(shape), Fill::kDistinct, shift};
}
BottomSpec NoGradient(BottomSpec spec) {
  spec.propagate = false;
  return spec;
}

LayerCase Case(std::string name, std::string param, std::vector<BottomSpec> bottoms) {
  LayerCase c;
  c.name = std::move(name);
  c.param = std::move(param);
  c.bottoms = std::move(bottoms);
  return c;
}

std::vector<LayerCase> AllCases() {
  const std::vector<int> s = {2, 3, 4, 5};
  std::vector<LayerCase> cases;
  auto add = [&cases](LayerCase c) { cases.push_back(std::move(c)); };
  // Neuron layers.
  add(Case("ReLU", "type: 'ReLU'", {Gaussian(s)}).Kink(0, 0.02));
  add(Case("ReLUCaffe", "type: 'ReLU'", {Gaussian(s)}).Kink(0, 0.02).Engine("CAFFE"));
  add(Case("ReLUInPlace", "type: 'ReLU'", {Gaussian(s)}).InPlace().Kink(0, 0.02));
  add(Case("ReLULeaky", "type: 'ReLU' relu_param { negative_slope: 0.1 }", {Gaussian(s)})
          .Kink(0, 0.02));
  add(Case("ReLUNegativeSlopeInPlace", "type: 'ReLU' relu_param { negative_slope: -0.5 }",
           {Gaussian(s)})
          .InPlace()
          .Kink(0, 0.02));
  add(Case("Sigmoid", "type: 'Sigmoid'", {Gaussian(s)}));
  add(Case("SigmoidCaffe", "type: 'Sigmoid'", {Gaussian(s)}).Engine("CAFFE"));
  add(Case("SigmoidInPlace", "type: 'Sigmoid'", {Gaussian(s)}).InPlace());
  add(Case("TanH", "type: 'TanH'", {Gaussian(s)}));
  add(Case("TanHCaffe", "type: 'TanH'", {Gaussian(s)}).Engine("CAFFE"));
  add(Case("TanHInPlace", "type: 'TanH'", {Gaussian(s)}).InPlace());
  add(Case("AbsVal", "type: 'AbsVal'", {Gaussian(s)}).Kink(0, 0.02));
  add(Case("AbsValInPlace", "type: 'AbsVal'", {Gaussian(s)}).InPlace().Kink(0, 0.02));
  add(Case("BNLL", "type: 'BNLL'", {Gaussian(s)}));
  add(Case("ELU", "type: 'ELU' elu_param { alpha: 0.7 }", {Gaussian(s)}).Kink(0, 0.02));
  add(Case("ELUNegativeAlphaInPlace", "type: 'ELU' elu_param { alpha: -0.5 }", {Gaussian(s)})
          .InPlace()
          .Kink(0, 0.02));
  add(Case("Exp", "type: 'Exp' exp_param { base: 2 scale: 0.5 shift: 0.3 }", {Gaussian(s)}));
  add(Case("Log", "type: 'Log' log_param { base: 3 scale: 2 shift: 0.1 }", {Uniform(s, 0.5, 2)}));
  add(Case("LogInPlace", "type: 'Log'", {Uniform(s, 0.5, 2)}).InPlace());
  add(Case("Power", "type: 'Power' power_param { power: 2.5 scale: 0.8 shift: 1.2 }",
           {Uniform(s, 0.5, 1.5)}));
  add(Case("PowerSquareInPlace", "type: 'Power' power_param { power: 2 scale: 0.5 shift: 0.1 }",
           {Gaussian(s)})
          .InPlace());
  add(Case("PowerConstant", "type: 'Power' power_param { power: 3 scale: 0 shift: 2 }",
           {Gaussian(s)}));
  add(Case("Clip", "type: 'Clip' clip_param { min: -0.5 max: 0.7 }", {Distinct(s, 0.05)}));
  add(Case("ClipInPlace", "type: 'Clip' clip_param { min: -0.5 max: 0.7 }", {Distinct(s, 0.05)})
          .InPlace());
  add(Case("Swish", "type: 'Swish' swish_param { beta: 1.5 }", {Gaussian(s)}));
  add(Case("SwishInPlace", "type: 'Swish'", {Gaussian(s)}).InPlace());
  add(Case("Threshold", "type: 'Threshold' threshold_param { threshold: 0.1 }", {Gaussian(s)})
          .NoBackward());
  add(Case("PReLU", "type: 'PReLU' prelu_param { filler { type: 'uniform' min: 0.1 max: 0.5 } }",
           {Gaussian(s)})
          .Kink(0, 0.02));
  add(Case("PReLUShared", "type: 'PReLU' prelu_param { channel_shared: true }", {Gaussian(s)})
          .Kink(0, 0.02));
  add(Case("PReLUInPlace", "type: 'PReLU'", {Gaussian(s)}).InPlace().Kink(0, 0.02));
  add(Case("DropoutTest", "type: 'Dropout' phase: TEST dropout_param { dropout_ratio: 0.3 }",
           {Gaussian(s)}));
  add(Case("DropoutTestUnscaled",
           "type: 'Dropout' phase: TEST dropout_param { dropout_ratio: 0.3 scale_train: false }",
           {Gaussian(s)}));

  // Vision layers.
  const std::string fillers =
      "weight_filler { type: 'gaussian' std: 0.3 } bias_filler { type: 'gaussian' std: 0.3 }";
  add(Case("Convolution",
           "type: 'Convolution' convolution_param { num_output: 4 kernel_size: 3 stride: 2 "
           "pad: 1 " +
               fillers + " }",
           {Gaussian({2, 3, 6, 5})}));
  add(Case("ConvolutionCaffe",
           "type: 'Convolution' convolution_param { num_output: 4 kernel_size: 3 stride: 2 "
           "pad: 1 " +
               fillers + " }",
           {Gaussian({2, 3, 6, 5})})
          .Engine("CAFFE"));
  add(Case("ConvolutionGroupDilation",
           "type: 'Convolution' convolution_param { num_output: 4 kernel_h: 3 kernel_w: 2 "
           "group: 2 dilation: 2 pad_h: 2 pad_w: 1 " +
               fillers + " }",
           {Gaussian({2, 4, 7, 6})}));
  add(Case("ConvolutionGroupDilationCaffe",
           "type: 'Convolution' convolution_param { num_output: 4 kernel_h: 3 kernel_w: 2 "
           "group: 2 dilation: 2 pad_h: 2 pad_w: 1 " +
               fillers + " }",
           {Gaussian({2, 4, 7, 6})})
          .Engine("CAFFE"));
  add(Case("Convolution1x1NoBias",
           "type: 'Convolution' convolution_param { num_output: 3 kernel_size: 1 "
           "bias_term: false weight_filler { type: 'gaussian' std: 0.3 } }",
           {Gaussian({2, 4, 3, 3})}));
  add(Case("Convolution1x1Caffe",
           "type: 'Convolution' convolution_param { num_output: 3 kernel_size: 1 " + fillers + " }",
           {Gaussian({2, 4, 3, 3})})
          .Engine("CAFFE"));
  add(Case("ConvolutionTwoBottoms",
           "type: 'Convolution' convolution_param { num_output: 2 kernel_size: 2 " + fillers + " }",
           {Gaussian({2, 3, 4, 4}), Gaussian({2, 3, 4, 4})})
          .Tops(2));
  add(Case("ConvolutionTwoBottomsCaffe",
           "type: 'Convolution' convolution_param { num_output: 2 kernel_size: 2 " + fillers + " }",
           {Gaussian({2, 3, 4, 4}), Gaussian({2, 3, 4, 4})})
          .Tops(2)
          .Engine("CAFFE"));
  add(Case("Im2col",
           "type: 'Im2col' convolution_param { kernel_h: 3 kernel_w: 2 stride: 2 pad: 1 "
           "dilation: 2 }",
           {Gaussian({2, 3, 7, 6})}));
  add(Case("Deconvolution",
           "type: 'Deconvolution' convolution_param { num_output: 3 kernel_size: 3 stride: 2 "
           "pad: 1 " +
               fillers + " }",
           {Gaussian({2, 4, 3, 4})}));
  add(Case("DeconvolutionGroup",
           "type: 'Deconvolution' convolution_param { num_output: 4 kernel_size: 2 group: 2 " +
               fillers + " }",
           {Gaussian({2, 4, 3, 3})}));
  // MAX runs Doppio's kernels under either engine (see CudnnPoolingLayer).
  add(Case("PoolingMax", "type: 'Pooling' pooling_param { pool: MAX kernel_size: 3 stride: 2 }",
           {Distinct({2, 3, 7, 7})}));
  add(Case("PoolingMaxCaffe",
           "type: 'Pooling' pooling_param { pool: MAX kernel_size: 3 stride: 2 }",
           {Distinct({2, 3, 7, 7})})
          .Engine("CAFFE"));
  add(Case("PoolingMaxCeil", "type: 'Pooling' pooling_param { pool: MAX kernel_size: 3 stride: 2 }",
           {Distinct({2, 3, 6, 6})}));
  add(Case("PoolingMaxPadded",
           "type: 'Pooling' pooling_param { pool: MAX kernel_size: 3 stride: 2 pad: 1 }",
           {Distinct({2, 3, 7, 7})}));
  add(Case("PoolingMaxPaddedCaffe",
           "type: 'Pooling' pooling_param { pool: MAX kernel_size: 3 stride: 2 pad: 1 }",
           {Distinct({2, 3, 7, 7})})
          .Engine("CAFFE"));
  add(Case("PoolingMaxMaskTop",
           "type: 'Pooling' pooling_param { pool: MAX kernel_h: 2 kernel_w: 3 stride: 2 }",
           {Distinct({2, 3, 6, 7})})
          .Tops(2)
          // The mask holds indices in the hundreds: their squares would swamp a float32
          // objective, and they do not depend on the input's values anyway.
          .ObjectiveTop(0));
  // 7x7, kernel 3, stride 2: Caffe's ceiling and cuDNN's floor agree (cuDNN runs).
  add(Case("PoolingAve",
           "type: 'Pooling' pooling_param { pool: AVE kernel_size: 3 stride: 2 pad: 1 }",
           {Gaussian({2, 3, 7, 7})}));
  add(Case("PoolingAveCaffe",
           "type: 'Pooling' pooling_param { pool: AVE kernel_size: 3 stride: 2 pad: 1 }",
           {Gaussian({2, 3, 7, 7})})
          .Engine("CAFFE"));
  // 6x6: the ceiling gives 3x3 where cuDNN would give 2x2, so the layer uses its own kernels.
  add(Case("PoolingAveCeil", "type: 'Pooling' pooling_param { pool: AVE kernel_size: 3 stride: 2 }",
           {Gaussian({2, 3, 6, 6})}));
  add(Case("PoolingAveGlobal", "type: 'Pooling' pooling_param { pool: AVE global_pooling: true }",
           {Gaussian({2, 3, 4, 5})}));
  add(Case("PoolingStochasticTest",
           "type: 'Pooling' phase: TEST pooling_param { pool: STOCHASTIC kernel_size: 3 "
           "stride: 2 }",
           {Uniform({2, 3, 7, 7}, 0.1, 1)}));
  // Small inputs: a float32 objective over a larger pyramid loses the digits the gradient
  // check needs.
  add(Case("SPPMax", "type: 'SPP' spp_param { pyramid_height: 3 }", {Distinct({1, 2, 6, 7})}));
  add(Case("SPPAve", "type: 'SPP' spp_param { pyramid_height: 2 pool: AVE }",
           {Gaussian({1, 2, 6, 5})}));
  add(Case("SPPOneLevel", "type: 'SPP' spp_param { pyramid_height: 1 }", {Distinct({2, 3, 4, 5})}));
  const std::string lrn = "lrn_param { local_size: 5 alpha: 0.3 beta: 0.75 k: 2 }";
  add(Case("LRN", "type: 'LRN' " + lrn, {Gaussian({2, 7, 3, 3})}));
  add(Case("LRNCaffe", "type: 'LRN' " + lrn, {Gaussian({2, 7, 3, 3})}).Engine("CAFFE"));
  add(Case("LRNOtherBeta", "type: 'LRN' lrn_param { local_size: 3 alpha: 0.5 beta: 0.6 k: 1.5 }",
           {Gaussian({2, 4, 3, 3})})
          .Engine("CAFFE"));
  add(Case("LRNWithinChannel",
           "type: 'LRN' lrn_param { local_size: 3 alpha: 0.3 beta: 0.75 "
           "norm_region: WITHIN_CHANNEL }",
           {Gaussian({2, 3, 5, 4})}));
  add(Case("InnerProduct",
           "type: 'InnerProduct' inner_product_param { num_output: 5 " + fillers + " }",
           {Gaussian({2, 3, 4})}));
  add(Case(
      "InnerProductTranspose",
      "type: 'InnerProduct' inner_product_param { num_output: 5 transpose: true " + fillers + " }",
      {Gaussian({3, 2, 2})}));
  add(Case("InnerProductAxis2",
           "type: 'InnerProduct' inner_product_param { num_output: 3 axis: 2 " + fillers + " }",
           {Gaussian({2, 3, 4})}));
  add(Case("BatchNormTrain", "type: 'BatchNorm' phase: TRAIN", {Gaussian({3, 4, 2, 3})}));
  add(Case("BatchNormTrainInPlace", "type: 'BatchNorm' phase: TRAIN", {Gaussian({3, 4, 2, 3})})
          .InPlace());
  add(Case("BatchNorm2d", "type: 'BatchNorm' phase: TRAIN", {Gaussian({5, 3})}));
  add(Case("BatchNormGlobalStats", "type: 'BatchNorm' phase: TEST", {Gaussian({3, 4, 2, 3})})
          .RandomParams()
          .Checks(Check::kNone));
  add(Case("MVN", "type: 'MVN'", {Gaussian({2, 3, 3, 3})}));
  add(Case("MVNAcrossChannels", "type: 'MVN' mvn_param { across_channels: true }",
           {Gaussian({2, 2, 3, 3})}));
  add(Case("MVNAcrossChannelsInPlace", "type: 'MVN' mvn_param { across_channels: true }",
           {Gaussian({2, 3, 4, 5})})
          .InPlace());
  add(Case("MVNMeanOnly", "type: 'MVN' mvn_param { normalize_variance: false }",
           {Gaussian({2, 3, 3, 3})}));
  add(Case("Scale",
           "type: 'Scale' scale_param { bias_term: true filler { type: 'uniform' min: 0.5 max: 2 } "
           "bias_filler { type: 'gaussian' } }",
           {Gaussian(s)}));
  add(Case("ScaleInPlace", "type: 'Scale' scale_param { filler { type: 'gaussian' } }",
           {Gaussian(s)})
          .InPlace());
  add(Case("ScaleBottom", "type: 'Scale' scale_param { axis: 1 }",
           {Gaussian(s), Gaussian({3, 4})}));
  add(Case("Bias", "type: 'Bias' bias_param { filler { type: 'gaussian' } }", {Gaussian(s)}));
  add(Case("BiasBottom", "type: 'Bias' bias_param { axis: 1 }", {Gaussian(s), Gaussian({3})}));
  add(Case("BiasInPlace", "type: 'Bias' bias_param { filler { type: 'gaussian' } }", {Gaussian(s)})
          .InPlace());
  add(Case("Softmax", "type: 'Softmax'", {Gaussian({2, 5, 3, 2})}));
  add(Case("SoftmaxCaffe", "type: 'Softmax'", {Gaussian({2, 5, 3, 2})}).Engine("CAFFE"));
  add(Case("SoftmaxRows", "type: 'Softmax'", {Gaussian({4, 10})}));
  add(Case("SoftmaxRowsCaffe", "type: 'Softmax'", {Gaussian({4, 10})}).Engine("CAFFE"));
  add(Case("SoftmaxAxis2InPlace", "type: 'Softmax' softmax_param { axis: 2 }",
           {Gaussian({2, 3, 4})})
          .InPlace());

  // Loss layers.
  add(Case("SoftmaxWithLoss", "type: 'SoftmaxWithLoss'", {Gaussian({4, 5}), Labels({4}, 5)})
          .Loss()
          .Checks(Check::kBottom0));
  add(Case("SoftmaxWithLossSpatialIgnore",
           "type: 'SoftmaxWithLoss' loss_weight: 3 loss_param { ignore_label: 1 "
           "normalization: VALID }",
           {Gaussian({2, 4, 3, 3}), Labels({2, 3, 3}, 4)})
          .Loss()
          .Checks(Check::kBottom0));
  add(Case("SoftmaxWithLossProbTop", "type: 'SoftmaxWithLoss' loss_weight: 1 loss_weight: 0",
           {Gaussian({3, 4}), Labels({3}, 4)})
          .Tops(2)
          .Loss()
          .Checks(Check::kNone));
  add(Case("EuclideanLoss", "type: 'EuclideanLoss'", {Gaussian({4, 3}), Gaussian({4, 3})}).Loss());
  add(Case("SigmoidCrossEntropyLoss", "type: 'SigmoidCrossEntropyLoss'",
           {Gaussian({4, 3}), NoGradient(Uniform({4, 3}, 0, 1))})
          .Loss()
          .Checks(Check::kBottom0));
  add(Case("HingeLossL1", "type: 'HingeLoss'", {Uniform({4, 5}, -0.5, 0.5), Labels({4}, 5)})
          .Loss()
          .Checks(Check::kBottom0));
  add(Case("HingeLossL2", "type: 'HingeLoss' hinge_loss_param { norm: L2 }",
           {Uniform({4, 5}, -0.5, 0.5), Labels({4}, 5)})
          .Loss()
          .Checks(Check::kBottom0));
  add(Case("ContrastiveLoss", "type: 'ContrastiveLoss' contrastive_loss_param { margin: 2 }",
           {Gaussian({4, 3}), Gaussian({4, 3}), Labels({4}, 2)})
          .Loss()
          .Checks(Check::kBottoms01));
  add(Case("ContrastiveLossLegacy",
           "type: 'ContrastiveLoss' contrastive_loss_param { margin: 5 legacy_version: true }",
           {Gaussian({4, 3}), Gaussian({4, 3}), Labels({4}, 2)})
          .Loss()
          .Checks(Check::kBottoms01));
  add(Case("InfogainLoss", "type: 'InfogainLoss'",
           {Gaussian({4, 5}), Labels({4}, 5), NoGradient(Uniform({5, 5}, 0.1, 1))})
          .Loss()
          .Checks(Check::kBottom0));
  add(Case("MultinomialLogisticLoss", "type: 'MultinomialLogisticLoss' loss_weight: 2",
           {Uniform({4, 5}, 0.2, 1), Labels({4}, 5)})
          .Loss()
          .Checks(Check::kBottom0));
  add(Case("Accuracy", "type: 'Accuracy' accuracy_param { top_k: 2 }",
           {Distinct({6, 5}), Labels({6}, 5)})
          .Tops(2)
          .NoBackward());
  add(Case("AccuracySpatialIgnore", "type: 'Accuracy' accuracy_param { ignore_label: 0 }",
           {Distinct({2, 4, 3}), Labels({2, 3}, 4)})
          .NoBackward());
  add(Case("ArgMax", "type: 'ArgMax' argmax_param { top_k: 2 out_max_val: true }",
           {Distinct({3, 6})})
          .NoBackward());
  add(Case("ArgMaxAxis", "type: 'ArgMax' argmax_param { top_k: 2 axis: 1 }", {Distinct({2, 5, 3})})
          .NoBackward());

  // Structure layers.
  add(Case("Concat", "type: 'Concat'",
           {Gaussian({2, 3, 4}), Gaussian({2, 2, 4}), Gaussian({2, 1, 4})}));
  add(Case("ConcatAxis2", "type: 'Concat' concat_param { axis: 2 }",
           {Gaussian({2, 3, 1}), Gaussian({2, 3, 2})}));
  add(Case("Slice", "type: 'Slice' slice_param { slice_point: 1 slice_point: 3 }",
           {Gaussian({2, 5, 3})})
          .Tops(3));
  add(Case("Split", "type: 'Split'", {Gaussian(s)}).Tops(3));
  add(Case("Flatten", "type: 'Flatten'", {Gaussian(s)}));
  add(Case("Reshape", "type: 'Reshape' reshape_param { shape { dim: 0 dim: -1 } }", {Gaussian(s)}));
  add(Case("Silence", "type: 'Silence'", {Gaussian(s), Gaussian({3})})
          .Tops(0)
          .Checks(Check::kNone));
  add(Case("EltwiseSum", "type: 'Eltwise' eltwise_param { operation: SUM coeff: 1 coeff: -2 }",
           {Gaussian(s), Gaussian(s)}));
  add(Case("EltwiseProd", "type: 'Eltwise' eltwise_param { operation: PROD }",
           {Gaussian(s), Gaussian(s), Gaussian(s)}));
  add(Case("EltwiseProdUnstable",
           "type: 'Eltwise' eltwise_param { operation: PROD stable_prod_grad: false }",
           {Uniform(s, 0.5, 1.5), Uniform(s, 0.5, 1.5)}));
  add(Case("EltwiseMax", "type: 'Eltwise' eltwise_param { operation: MAX }",
           {Distinct(s), Distinct(s, 0.033), Distinct(s, 0.066)}));
  add(Case("EltwiseSumInPlace",
           "type: 'Eltwise' eltwise_param { operation: SUM coeff: 0.5 coeff: -2 }",
           {Gaussian(s), Gaussian(s)})
          .InPlace());
  add(Case("EltwiseMaxInPlace", "type: 'Eltwise' eltwise_param { operation: MAX }",
           {Distinct(s), Distinct(s, 0.033), Distinct(s, 0.066)})
          .InPlace());
  add(Case("BatchReindex", "type: 'BatchReindex'",
           {Gaussian({4, 3, 2}), NoGradient(Labels({6}, 4))})
          .Checks(Check::kBottom0));
  add(Case("Filter", "type: 'Filter'",
           {Gaussian({6, 3}), Gaussian({6, 2, 2}), NoGradient(Labels({6}, 2))})
          .Tops(2)
          .Checks(Check::kBottoms01));
  add(Case("Tile", "type: 'Tile' tile_param { axis: 1 tiles: 3 }", {Gaussian({2, 3, 2})}));
  add(Case("Crop", "type: 'Crop' crop_param { axis: 2 offset: 1 offset: 2 }",
           {Gaussian({2, 3, 6, 6}), NoGradient(Gaussian({2, 3, 4, 3}))})
          .Checks(Check::kBottom0));
  add(Case("CropAxis1", "type: 'Crop' crop_param { axis: 1 offset: 1 }",
           {Gaussian({2, 4, 5}), NoGradient(Gaussian({2, 2, 3}))})
          .Checks(Check::kBottom0));
  add(Case("ReductionSum", "type: 'Reduction' reduction_param { axis: 1 }", {Gaussian(s)}));
  add(Case("ReductionMean",
           "type: 'Reduction' reduction_param { operation: MEAN axis: 2 coeff: 2 }",
           {Gaussian(s)}));
  add(Case("ReductionAsum", "type: 'Reduction' reduction_param { operation: ASUM }", {Gaussian(s)})
          .Kink(0, 0.02));
  // Per-row sums (axis 1): a single sum of all 120 squares is large enough that a float32
  // finite difference of its square loses two digits.
  add(Case("ReductionSumsq",
           "type: 'Reduction' reduction_param { operation: SUMSQ coeff: 0.5 axis: 1 }",
           {Gaussian(s)}));
  add(Case("LSTMUnit", "type: 'LSTMUnit'",
           {Gaussian({1, 3, 4}), Gaussian({1, 3, 16}), NoGradient(Labels({1, 3}, 2))})
          .Tops(2)
          .Checks(Check::kBottoms01));
  add(Case("Embed",
           "type: 'Embed' embed_param { input_dim: 6 num_output: 3 "
           "weight_filler { type: 'gaussian' } bias_filler { type: 'gaussian' } }",
           {Labels({7}, 6)})
          .Checks(Check::kParamsOnly));
  // With expose_hidden nothing is carried over from an earlier Forward (the initial state is a
  // bottom), so repeated Forwards agree and cont may be any 0/1 pattern. The recurrent nets run
  // their own layers' kernels.
  const std::string recurrent =
      " recurrent_param { num_output: 3 expose_hidden: true weight_filler { type: 'uniform' "
      "min: -0.5 max: 0.5 } bias_filler { type: 'uniform' min: -0.5 max: 0.5 } }";
  add(Case("LSTM", "type: 'LSTM'" + recurrent,
           {Gaussian({3, 2, 4}), NoGradient(Labels({3, 2}, 2)), Gaussian({1, 2, 3}),
            Gaussian({1, 2, 3})})
          .Tops(3)
          .Checks(Check::kBottom0));
  add(Case("LSTMStaticInput", "type: 'LSTM'" + recurrent,
           {Gaussian({3, 2, 4}), NoGradient(Labels({3, 2}, 2)), Gaussian({2, 5}),
            Gaussian({1, 2, 3}), Gaussian({1, 2, 3})})
          .Tops(3)
          .Checks(Check::kNone));  // its gradient is checked on the CPU, and compared here
  add(Case("RNN", "type: 'RNN'" + recurrent,
           {Gaussian({3, 2, 4}), NoGradient(Labels({3, 2}, 2)), Gaussian({1, 2, 3})})
          .Tops(2)
          .Checks(Check::kBottom0));
  add(Case("DummyData",
           "type: 'DummyData' dummy_data_param { shape { dim: 2 dim: 3 } data_filler { "
           "type: 'gaussian' } }",
           {})
          .Tops(2)
          .NoBackward());
  add(Case("Parameter", "type: 'Parameter' parameter_param { shape { dim: 2 dim: 3 } }", {})
          .Checks(Check::kParamsOnly));
  add(Case("Input", "type: 'Input' input_param { shape { dim: 2 dim: 3 } }", {}).NoBackward());
  return cases;
}

// Sets `engine` in the layer's own parameter message (convolution_param for Convolution...).
void SetEngine(LayerParameter* param, const std::string& engine) {
  const char* field = nullptr;
  const std::string& type = param->type();
  if (type == "Convolution") field = "convolution_param";
  if (type == "Pooling") field = "pooling_param";
  if (type == "LRN") field = "lrn_param";
  if (type == "Softmax") field = "softmax_param";
  if (type == "ReLU") field = "relu_param";
  if (type == "Sigmoid") field = "sigmoid_param";
  if (type == "TanH") field = "tanh_param";
  ASSERT_NE(field, nullptr) << type << " has no engine field";
  const auto* descriptor = param->GetDescriptor()->FindFieldByName(field);
  auto* message = param->GetReflection()->MutableMessage(param, descriptor);
  const auto* engine_field = message->GetDescriptor()->FindFieldByName("engine");
  ASSERT_NE(engine_field, nullptr);
  const auto* value = engine_field->enum_type()->FindValueByName(engine);
  ASSERT_NE(value, nullptr);
  message->GetReflection()->SetEnum(message, engine_field, value);
}

template <typename Dtype>
void FillBottom(Blob<Dtype>* blob, const BottomSpec& spec, Rng& rng) {
  Dtype* data = blob->mutable_cpu_data();
  const int n = blob->count();
  switch (spec.fill) {
    case Fill::kGaussian:
      FillGaussian(blob, rng);
      break;
    case Fill::kUniform:
      FillUniform(blob, rng, Dtype(spec.a), Dtype(spec.b));
      break;
    case Fill::kLabels:
      for (int i = 0; i < n; ++i) data[i] = static_cast<Dtype>(rng.Below(int(spec.a)));
      break;
    case Fill::kDistinct: {
      std::vector<int> order(n);
      std::iota(order.begin(), order.end(), 0);
      std::shuffle(order.begin(), order.end(), rng.engine());
      for (int i = 0; i < n; ++i) data[i] = static_cast<Dtype>((order[i] - n / 2) * 0.1 + spec.a);
      break;
    }
  }
}

// Bottoms (filled) and tops for one instance of a case.
template <typename Dtype>
struct Blobs {
  std::vector<std::unique_ptr<Blob<Dtype>>> owned;
  std::vector<Blob<Dtype>*> bottom;
  std::vector<Blob<Dtype>*> top;
  std::vector<bool> propagate;

  Blobs(const LayerCase& c, std::uint64_t seed) {
    Rng rng(seed);
    for (const BottomSpec& spec : c.bottoms) {
      owned.push_back(std::make_unique<Blob<Dtype>>(spec.shape));
      FillBottom(owned.back().get(), spec, rng);
      bottom.push_back(owned.back().get());
      propagate.push_back(spec.propagate);
    }
    for (int t = 0; t < c.tops; ++t) {
      if (c.in_place && t == 0) {
        top.push_back(bottom[0]);
        continue;
      }
      owned.push_back(std::make_unique<Blob<Dtype>>());
      top.push_back(owned.back().get());
    }
  }
};

template <typename Dtype>
std::shared_ptr<Layer<Dtype>> MakeLayer(const LayerCase& c, Mode mode) {
  LayerParameter param = ParseText<LayerParameter>("name: 'layer' " + c.param);
  // Named bottoms and tops, as in a net (the engine choice may depend on the top count).
  for (std::size_t b = 0; b < c.bottoms.size(); ++b) param.add_bottom("b" + std::to_string(b));
  for (int t = 0; t < c.tops; ++t) {
    param.add_top(c.in_place && t == 0 ? "b0" : "t" + std::to_string(t));
  }
  if (!c.engine.empty()) SetEngine(&param, c.engine);
  auto layer = LayerRegistry<Dtype>::CreateLayer(param, mode);
  if (mode == Mode::GPU) layer->SetGpu(TestGpu());
  return layer;
}

template <typename Dtype>
void CompareWithCpu(const LayerCase& c) {
  const double tolerance = GpuTolerance<Dtype>();
  Blobs<Dtype> cpu(c, 1234), gpu(c, 1234);
  auto cpu_layer = MakeLayer<Dtype>(c, Mode::CPU);
  auto gpu_layer = MakeLayer<Dtype>(c, Mode::GPU);
  cpu_layer->SetUp(cpu.bottom, cpu.top);
  gpu_layer->SetUp(gpu.bottom, gpu.top);
  ASSERT_EQ(cpu_layer->blobs().size(), gpu_layer->blobs().size());
  // The same parameters, and the same non-zero diffs, so that accumulation shows.
  Rng rng(99);
  for (std::size_t k = 0; k < cpu_layer->blobs().size(); ++k) {
    Blob<Dtype>* from = cpu_layer->blobs()[k].get();
    Blob<Dtype>* to = gpu_layer->blobs()[k].get();
    if (c.randomize_params) FillUniform(from, rng, Dtype(0.5), Dtype(1.5));
    rng_gaussian<Dtype>(from->count(), Dtype(0), Dtype(1), rng, from->mutable_cpu_diff());
    to->CopyFrom(*from);
    to->CopyFrom(*from, true);
  }

  const Dtype cpu_loss = cpu_layer->Forward(cpu.bottom, cpu.top);
  const Dtype gpu_loss = gpu_layer->Forward(gpu.bottom, gpu.top);
  EXPECT_NEAR(cpu_loss, gpu_loss, tolerance * std::max<double>(1, std::fabs(cpu_loss)));
  for (std::size_t t = 0; t < cpu.top.size(); ++t) {
    ExpectBlobsClose(*cpu.top[t], *gpu.top[t], false, tolerance, "top " + std::to_string(t));
  }
  for (std::size_t k = 0; k < cpu_layer->blobs().size(); ++k) {
    ExpectBlobsClose(*cpu_layer->blobs()[k], *gpu_layer->blobs()[k], false, tolerance,
                     "parameter " + std::to_string(k) + " after Forward");
  }
  if (!c.backward) return;

  if (!c.loss) {
    for (std::size_t t = 0; t < cpu.top.size(); ++t) {
      rng_gaussian<Dtype>(cpu.top[t]->count(), Dtype(0), Dtype(1), rng,
                          cpu.top[t]->mutable_cpu_diff());
      gpu.top[t]->CopyFrom(*cpu.top[t], true);
    }
  }
  // Bottom diffs start from the same non-zero values on both sides, so that a Backward that
  // adds to them, or leaves some of them unwritten, differs from one that overwrites them.
  for (std::size_t b = 0; b < cpu.bottom.size(); ++b) {
    if (!cpu.propagate[b] || (c.in_place && b == 0)) continue;  // in place: the top diff
    rng_gaussian<Dtype>(cpu.bottom[b]->count(), Dtype(0), Dtype(1), rng,
                        cpu.bottom[b]->mutable_cpu_diff());
    gpu.bottom[b]->CopyFrom(*cpu.bottom[b], true);
  }
  cpu_layer->Backward(cpu.top, cpu.propagate, cpu.bottom);
  gpu_layer->Backward(gpu.top, gpu.propagate, gpu.bottom);
  for (std::size_t b = 0; b < cpu.bottom.size(); ++b) {
    if (!cpu.propagate[b]) continue;
    ExpectBlobsClose(*cpu.bottom[b], *gpu.bottom[b], true, tolerance,
                     "bottom " + std::to_string(b) + " diff");
  }
  for (std::size_t k = 0; k < cpu_layer->blobs().size(); ++k) {
    ExpectBlobsClose(*cpu_layer->blobs()[k], *gpu_layer->blobs()[k], true, tolerance,
                     "parameter " + std::to_string(k) + " diff");
  }
}

template <typename Dtype>
void CheckGradientOnGpu(const LayerCase& c) {
  // In place, Forward overwrites the perturbed input; the out-of-place cases cover the math.
  if (c.check == Check::kNone || c.in_place) return;
  Blobs<Dtype> blobs(c, 4321);
  auto layer = MakeLayer<Dtype>(c, Mode::GPU);
  const bool fp32 = sizeof(Dtype) == 4;
  GradientChecker<Dtype> checker(fp32 ? Dtype(1e-2) : Dtype(1e-3), fp32 ? Dtype(1e-2) : Dtype(1e-3),
                                 1701, Dtype(c.kink), Dtype(c.kink_range));
  layer->SetUp(blobs.bottom, blobs.top);
  const int num_bottoms = static_cast<int>(blobs.bottom.size());
  switch (c.check) {
    case Check::kAll:
      checker.CheckGradientSingle(layer.get(), blobs.bottom, blobs.top, -1, c.objective_top, -1,
                                  false);
      break;
    case Check::kBottom0:
      checker.CheckGradientSingle(layer.get(), blobs.bottom, blobs.top, 0, c.objective_top, -1,
                                  false);
      break;
    case Check::kParamsOnly:
      checker.CheckGradientSingle(layer.get(), blobs.bottom, blobs.top, num_bottoms,
                                  c.objective_top, -1, false);
      break;
    case Check::kBottoms01:
      checker.CheckGradientSingle(layer.get(), blobs.bottom, blobs.top, 0, c.objective_top, -1,
                                  false);
      checker.CheckGradientSingle(layer.get(), blobs.bottom, blobs.top, 1, c.objective_top, -1,
                                  false);
      break;
    case Check::kNone:
      break;
  }
}

class LayerGpuTest : public ::testing::TestWithParam<LayerCase> {
 protected:
  void SetUp() override { DOPPIO_REQUIRE_GPU(); }
};

TEST_P(LayerGpuTest, MatchesCpuFloat) { CompareWithCpu<float>(GetParam()); }
TEST_P(LayerGpuTest, MatchesCpuDouble) { CompareWithCpu<double>(GetParam()); }
TEST_P(LayerGpuTest, GradientFloat) { CheckGradientOnGpu<float>(GetParam()); }
TEST_P(LayerGpuTest, GradientDouble) { CheckGradientOnGpu<double>(GetParam()); }

INSTANTIATE_TEST_SUITE_P(Layers, LayerGpuTest, ::testing::ValuesIn(AllCases()),
                         [](const ::testing::TestParamInfo<LayerCase>& info) {
                           return info.param.name;
                         });

// Random layers draw different numbers on the GPU; their checks are properties instead.
template <typename Dtype>
class RandomLayerGpuTest : public ::testing::Test {
 protected:
  void SetUp() override { DOPPIO_REQUIRE_GPU(); }
};
TYPED_TEST_SUITE(RandomLayerGpuTest, TestDtypes);

TYPED_TEST(RandomLayerGpuTest, DropoutTrainMasksAndScales) {
  using Dtype = TypeParam;
  auto layer = LayerRegistry<Dtype>::CreateLayer(
      ParseText<LayerParameter>(
          "name: 'drop' type: 'Dropout' phase: TRAIN dropout_param { dropout_ratio: 0.4 }"),
      Mode::GPU);
  layer->SetGpu(TestGpu());
  Rng rng(5);
  Blob<Dtype> bottom({50, 40}), top;
  FillUniform<Dtype>(&bottom, rng, Dtype(0.5), Dtype(1.5));
  layer->SetUp({&bottom}, {&top});
  layer->set_seed(3);
  layer->Forward({&bottom}, {&top});
  std::vector<Dtype> first(top.cpu_data(), top.cpu_data() + top.count());
  int kept = 0;
  const Dtype scale = Dtype(1) / Dtype(0.6);
  for (int i = 0; i < top.count(); ++i) {
    if (first[i] == Dtype(0)) continue;
    ++kept;
    EXPECT_NEAR(first[i], bottom.cpu_data()[i] * scale, 1e-5);
  }
  EXPECT_NEAR(double(kept) / top.count(), 0.6, 0.05);
  // The gradient passes exactly where the output did.
  rng_gaussian<Dtype>(top.count(), Dtype(0), Dtype(1), rng, top.mutable_cpu_diff());
  layer->Backward({&top}, {true}, {&bottom});
  for (int i = 0; i < top.count(); ++i) {
    const Dtype expected = first[i] == Dtype(0) ? Dtype(0) : top.cpu_diff()[i] * scale;
    EXPECT_NEAR(bottom.cpu_diff()[i], expected, 1e-5) << i;
  }
  // The CPU draws the same masks for the same seed and sample positions.
  auto cpu = LayerRegistry<Dtype>::CreateLayer(layer->layer_param(), Mode::CPU);
  Blob<Dtype> cpu_top;
  cpu->SetUp({&bottom}, {&cpu_top});
  cpu->set_seed(3);
  cpu->Forward({&bottom}, {&cpu_top});
  EXPECT_TRUE(std::equal(first.begin(), first.end(), cpu_top.cpu_data()));
  // A batch at another position, or another seed, draws other masks.
  for (const auto& [seed, position] : {std::pair<int, int>{3, 50}, {4, 0}}) {
    layer->set_seed(seed);
    layer->batch_position().Set(position);
    layer->Forward({&bottom}, {&top});
    EXPECT_FALSE(std::equal(first.begin(), first.end(), top.cpu_data())) << seed << " " << position;
  }
}

TYPED_TEST(RandomLayerGpuTest, StochasticPoolingTrainPicksWindowValues) {
  using Dtype = TypeParam;
  const LayerParameter param = ParseText<LayerParameter>(
      "name: 'pool' type: 'Pooling' phase: TRAIN pooling_param { pool: STOCHASTIC kernel_size: 2 "
      "stride: 2 }");
  auto layer = LayerRegistry<Dtype>::CreateLayer(param, Mode::GPU);
  layer->SetGpu(TestGpu());
  Rng rng(6);
  Blob<Dtype> bottom({2, 3, 4, 4}), top;
  FillUniform<Dtype>(&bottom, rng, Dtype(0.1), Dtype(1));
  layer->SetUp({&bottom}, {&top});
  layer->Forward({&bottom}, {&top});
  const Dtype* in = bottom.cpu_data();
  for (int plane = 0; plane < 6; ++plane) {
    for (int ph = 0; ph < 2; ++ph) {
      for (int pw = 0; pw < 2; ++pw) {
        const Dtype out = top.cpu_data()[(plane * 2 + ph) * 2 + pw];
        bool found = false;
        for (int h = 2 * ph; h < 2 * ph + 2; ++h) {
          for (int w = 2 * pw; w < 2 * pw + 2; ++w) found |= in[(plane * 4 + h) * 4 + w] == out;
        }
        EXPECT_TRUE(found) << "plane " << plane << " output (" << ph << ", " << pw << ")";
      }
    }
  }
  // Backward routes each output's gradient to the element it picked, and nowhere else.
  cpu_set(top.count(), Dtype(1), top.mutable_cpu_diff());
  layer->Backward({&top}, {true}, {&bottom});
  const Dtype* diff = bottom.cpu_diff();
  for (int plane = 0; plane < 6; ++plane) {
    for (int ph = 0; ph < 2; ++ph) {
      for (int pw = 0; pw < 2; ++pw) {
        const Dtype out = top.cpu_data()[(plane * 2 + ph) * 2 + pw];
        for (int h = 2 * ph; h < 2 * ph + 2; ++h) {
          for (int w = 2 * pw; w < 2 * pw + 2; ++w) {
            const int i = (plane * 4 + h) * 4 + w;
            EXPECT_EQ(diff[i], in[i] == out ? Dtype(1) : Dtype(0)) << "element " << i;
          }
        }
      }
    }
  }
  // The CPU picks the same elements for the same seed and sample positions.
  auto cpu = LayerRegistry<Dtype>::CreateLayer(param, Mode::CPU);
  Blob<Dtype> cpu_top;
  cpu->SetUp({&bottom}, {&cpu_top});
  cpu->Forward({&bottom}, {&cpu_top});
  EXPECT_TRUE(std::equal(cpu_top.cpu_data(), cpu_top.cpu_data() + cpu_top.count(), top.cpu_data()));
}

// A layer may be followed by one running in place on its top (Dropout, Scale): its gradient
// must still be the CPU's, whatever the top holds by the time Backward runs. On the GPU the
// default engine runs (cuDNN where the build has it): cuDNN's MAX pooling, LRN and ReLU
// backward read the top, so a build with cuDNN checks that they are kept from doing so. A
// build without cuDNN (the CUDA emulation) runs the CAFFE kernels, whose backward must not
// read the top either, since the cuDNN layers hand work to them.
template <typename Dtype>
class InPlaceConsumerGpuTest : public ::testing::Test {
 protected:
  void SetUp() override { DOPPIO_REQUIRE_GPU(); }

  // Multiplies the top by `factor` between Forward and Backward, as the later layer would.
  void ExpectBackwardIgnoresChangesToTop(const std::string& param_text,
                                         const std::vector<int>& shape, Dtype factor) {
    const LayerParameter param = ParseText<LayerParameter>(param_text);
    auto cpu_layer = LayerRegistry<Dtype>::CreateLayer(param, Mode::CPU);
    auto gpu_layer = LayerRegistry<Dtype>::CreateLayer(param, Mode::GPU);
    gpu_layer->SetGpu(TestGpu());
    Rng rng(7);
    Blob<Dtype> cpu_bottom(shape), gpu_bottom, cpu_top, gpu_top;
    FillGaussian(&cpu_bottom, rng);
    gpu_bottom.CopyFrom(cpu_bottom, false, true);
    cpu_layer->SetUp({&cpu_bottom}, {&cpu_top});
    gpu_layer->SetUp({&gpu_bottom}, {&gpu_top});
    cpu_layer->Forward({&cpu_bottom}, {&cpu_top});
    gpu_layer->Forward({&gpu_bottom}, {&gpu_top});
    for (Blob<Dtype>* top : {&cpu_top, &gpu_top}) {
      cpu_scal(top->count(), factor, top->mutable_cpu_data());
    }
    rng_gaussian<Dtype>(cpu_top.count(), Dtype(0), Dtype(1), rng, cpu_top.mutable_cpu_diff());
    gpu_top.CopyFrom(cpu_top, true);
    cpu_layer->Backward({&cpu_top}, {true}, {&cpu_bottom});
    gpu_layer->Backward({&gpu_top}, {true}, {&gpu_bottom});
    ExpectBlobsClose(cpu_bottom, gpu_bottom, true, GpuTolerance<Dtype>(), "bottom diff");
  }
};
TYPED_TEST_SUITE(InPlaceConsumerGpuTest, TestDtypes);

TYPED_TEST(InPlaceConsumerGpuTest, MaxPoolingBackwardIgnoresChangesToTop) {
  this->ExpectBackwardIgnoresChangesToTop(
      "name: 'pool' type: 'Pooling' top: 'pool' pooling_param { pool: MAX kernel_size: 3 "
      "stride: 2 }",
      {2, 3, 7, 7}, TypeParam(3));
}

// Within cuDNN's LRN limits, so that a build with cuDNN runs it.
TYPED_TEST(InPlaceConsumerGpuTest, LRNBackwardIgnoresChangesToTop) {
  this->ExpectBackwardIgnoresChangesToTop(
      "name: 'norm' type: 'LRN' top: 'norm' lrn_param { local_size: 3 alpha: 0.5 beta: 0.75 }",
      {2, 7, 3, 3}, TypeParam(3));
}

// A negative factor (Scale) flips the top's signs: a backward that took the sign from the
// top would pass the gradient where the input was negative and drop it where positive.
TYPED_TEST(InPlaceConsumerGpuTest, ReLUBackwardIgnoresChangesToTop) {
  this->ExpectBackwardIgnoresChangesToTop("name: 'relu' type: 'ReLU' top: 'relu'", {2, 3, 4, 5},
                                          TypeParam(-3));
}

// Errors a kernel finds (labels out of range) are reported like the CPU's.
TEST(LayerGpuErrorTest, BadLabelNamesLayer) {
  DOPPIO_REQUIRE_GPU();
  auto layer = LayerRegistry<float>::CreateLayer(
      ParseText<LayerParameter>("name: 'loss' type: 'SoftmaxWithLoss'"), Mode::GPU);
  layer->SetGpu(TestGpu());
  Blob<float> scores({3, 4}), labels({3}), loss;
  SetValues(&labels, {0, 7, 1});
  layer->SetUp({&scores, &labels}, {&loss});
  ExpectError(
      [&] {
        layer->Forward({&scores, &labels}, {&loss});
      },
      {"layer 'loss' (SoftmaxWithLoss)", "label value 7", "label index 1"});
}

TEST(LayerGpuErrorTest, BadEmbedIndexNamesLayer) {
  DOPPIO_REQUIRE_GPU();
  auto layer = LayerRegistry<float>::CreateLayer(
      ParseText<LayerParameter>(
          "name: 'embed' type: 'Embed' embed_param { input_dim: 3 num_output: 2 }"),
      Mode::GPU);
  layer->SetGpu(TestGpu());
  Blob<float> indices({3}), top;
  SetValues(&indices, {0, 1.5, 2});
  layer->SetUp({&indices}, {&top});
  ExpectError([&] { layer->Forward({&indices}, {&top}); }, {"layer 'embed' (Embed)", "1.5"});
}

}  // namespace
}  // namespace doppio
