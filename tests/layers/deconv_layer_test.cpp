#include "doppio/layers/deconv_layer.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "gradient_checker.hpp"
#include "test_util.hpp"

namespace doppio {

namespace {

struct DeconvSpec {
  int kernel_h, kernel_w, stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w, group;
};

// Transposed convolution by scattering: every input pixel adds its value times the filter
// into the output window it maps to. Weights are (channels, num_output / group, kh, kw).
template <typename Dtype>
void NaiveDeconvolution(const Blob<Dtype>& in, const Blob<Dtype>& weight, const Blob<Dtype>* bias,
                        const DeconvSpec& s, Blob<Dtype>* out) {
  const int num = in.shape(0), channels = in.shape(1), height = in.shape(2), width = in.shape(3);
  const int outputs = out->shape(1), out_h = out->shape(2), out_w = out->shape(3);
  const int in_per_group = channels / s.group, out_per_group = outputs / s.group;
  Dtype* o = out->mutable_cpu_data();
  for (int n = 0; n < num; ++n)
    for (int k = 0; k < outputs; ++k)
      for (int y = 0; y < out_h; ++y)
        for (int x = 0; x < out_w; ++x)
          o[out->offset(n, k, y, x)] = bias ? bias->cpu_data()[k] : Dtype(0);
  for (int n = 0; n < num; ++n)
    for (int c = 0; c < channels; ++c) {
      const int g = c / in_per_group;
      for (int y = 0; y < height; ++y)
        for (int x = 0; x < width; ++x)
          for (int k = 0; k < out_per_group; ++k)
            for (int ki = 0; ki < s.kernel_h; ++ki)
              for (int kj = 0; kj < s.kernel_w; ++kj) {
                const int oy = y * s.stride_h - s.pad_h + ki * s.dilation_h;
                const int ox = x * s.stride_w - s.pad_w + kj * s.dilation_w;
                if (oy < 0 || oy >= out_h || ox < 0 || ox >= out_w) continue;
                o[out->offset(n, g * out_per_group + k, oy, ox)] +=
                    weight.data_at(c, k, ki, kj) * in.data_at(n, c, y, x);
              }
    }
}

std::string DeconvText(int num_output, const DeconvSpec& s, bool bias = true) {
  return "name: 'deconv' type: 'Deconvolution' convolution_param { num_output: " +
         std::to_string(num_output) + " kernel_h: " + std::to_string(s.kernel_h) +
         " kernel_w: " + std::to_string(s.kernel_w) + " stride_h: " + std::to_string(s.stride_h) +
         " stride_w: " + std::to_string(s.stride_w) + " pad_h: " + std::to_string(s.pad_h) +
         " pad_w: " + std::to_string(s.pad_w) + " dilation: " + std::to_string(s.dilation_h) +
         " dilation: " + std::to_string(s.dilation_w) + " group: " + std::to_string(s.group) +
         " bias_term: " + (bias ? "true" : "false") +
         " weight_filler { type: 'gaussian' std: 0.5 } bias_filler { type: 'gaussian' std: 0.5 } "
         "}";
}

}  // namespace

template <typename Dtype>
class DeconvolutionLayerTest : public ::testing::Test {
 protected:
  void CheckAgainstNaive(const std::vector<int>& shape, int num_output, const DeconvSpec& s,
                         bool bias) {
    Blob<Dtype> bottom(shape), top;
    FillGaussian(&bottom, rng_);
    std::vector<Blob<Dtype>*> b = {&bottom}, t = {&top};
    DeconvolutionLayer<Dtype> layer(ParseText<LayerParameter>(DeconvText(num_output, s, bias)));
    layer.SetUp(b, t);
    layer.Forward(b, t);
    for (int i = 0; i < 2; ++i) {
      const int kernel = i == 0 ? s.kernel_h : s.kernel_w;
      const int stride = i == 0 ? s.stride_h : s.stride_w;
      const int pad = i == 0 ? s.pad_h : s.pad_w;
      const int dilation = i == 0 ? s.dilation_h : s.dilation_w;
      EXPECT_EQ(top.shape(2 + i),
                stride * (shape[2 + i] - 1) + dilation * (kernel - 1) + 1 - 2 * pad);
    }
    EXPECT_EQ(layer.blobs()[0]->shape(),
              std::vector<int>({shape[1], num_output / s.group, s.kernel_h, s.kernel_w}));
    Blob<Dtype> expected(top.shape());
    NaiveDeconvolution(bottom, *layer.blobs()[0], bias ? layer.blobs()[1].get() : nullptr, s,
                       &expected);
    for (int i = 0; i < top.count(); ++i) {
      EXPECT_NEAR(expected.cpu_data()[i], top.cpu_data()[i], 1e-4) << "element " << i;
    }
  }

  Rng rng_{99};
};

TYPED_TEST_SUITE(DeconvolutionLayerTest, TestDtypes);

TYPED_TEST(DeconvolutionLayerTest, HandComputedSmallCase) {
  // A 2x2 input [[1, 2], [3, 4]] with a 2x2 filter of ones, stride 2: each input pixel paints
  // its own 2x2 block of the 4x4 output. With stride 1 the blocks overlap: 3x3 output whose
  // centre gets 1 + 2 + 3 + 4.
  Blob<TypeParam> bottom({1, 1, 2, 2}), top;
  for (int i = 0; i < 4; ++i) bottom.mutable_cpu_data()[i] = i + 1;
  std::vector<Blob<TypeParam>*> b = {&bottom}, t = {&top};
  DeconvolutionLayer<TypeParam> layer(ParseText<LayerParameter>(
      "name: 'd' type: 'Deconvolution' convolution_param { num_output: 1 kernel_size: 2 "
      "stride: 2 weight_filler { type: 'constant' value: 1 } bias_term: false }"));
  layer.SetUp(b, t);
  layer.Forward(b, t);
  ASSERT_EQ(top.shape(), std::vector<int>({1, 1, 4, 4}));
  const TypeParam painted[16] = {1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4};
  for (int i = 0; i < 16; ++i) EXPECT_NEAR(top.cpu_data()[i], painted[i], 1e-6) << i;

  DeconvolutionLayer<TypeParam> overlap(ParseText<LayerParameter>(
      "name: 'd' type: 'Deconvolution' convolution_param { num_output: 1 kernel_size: 2 "
      "weight_filler { type: 'constant' value: 1 } bias_filler { type: 'constant' value: 1 } }"));
  overlap.SetUp(b, t);
  overlap.Forward(b, t);
  ASSERT_EQ(top.shape(), std::vector<int>({1, 1, 3, 3}));
  const TypeParam summed[9] = {2, 4, 3, 5, 11, 7, 4, 8, 5};
  for (int i = 0; i < 9; ++i) EXPECT_NEAR(top.cpu_data()[i], summed[i], 1e-6) << i;
}

TYPED_TEST(DeconvolutionLayerTest, MatchesNaiveDeconvolution) {
  this->CheckAgainstNaive({2, 3, 4, 3}, 2, {3, 3, 2, 2, 1, 1, 1, 1, 1}, true);
  this->CheckAgainstNaive({2, 4, 3, 4}, 6, {3, 2, 1, 2, 0, 1, 1, 1, 2}, true);
  this->CheckAgainstNaive({1, 4, 4, 4}, 4, {3, 3, 2, 1, 2, 1, 2, 2, 4}, false);
  this->CheckAgainstNaive({2, 3, 3, 3}, 5, {1, 1, 1, 1, 0, 0, 1, 1, 1}, true);  // 1x1
  // Inputs large enough that images run one GEMM each; and small ones batched six to a GEMM
  // with one left over.
  this->CheckAgainstNaive({3, 2, 48, 50}, 3, {3, 3, 1, 1, 1, 1, 1, 1, 1}, true);
  this->CheckAgainstNaive({7, 2, 9, 11}, 2, {1, 1, 1, 1, 0, 0, 1, 1, 1}, true);
  this->CheckAgainstNaive({7, 2, 9, 11}, 4, {3, 3, 2, 2, 1, 1, 1, 1, 2}, true);
}

TYPED_TEST(DeconvolutionLayerTest, GradientStrided) {
  Blob<TypeParam> bottom({2, 3, 3, 2}), top;
  FillGaussian(&bottom, this->rng_);
  std::vector<Blob<TypeParam>*> b = {&bottom}, t = {&top};
  DeconvolutionLayer<TypeParam> layer(
      ParseText<LayerParameter>(DeconvText(2, {3, 2, 2, 1, 1, 0, 1, 1, 1})));
  GradientChecker<TypeParam> checker(1e-2, 1e-3);
  checker.CheckGradientExhaustive(&layer, b, t);
}

TYPED_TEST(DeconvolutionLayerTest, GradientGroupedDilatedNoBias) {
  Blob<TypeParam> bottom({1, 4, 3, 3}), top;
  FillGaussian(&bottom, this->rng_);
  std::vector<Blob<TypeParam>*> b = {&bottom}, t = {&top};
  DeconvolutionLayer<TypeParam> layer(
      ParseText<LayerParameter>(DeconvText(2, {2, 2, 1, 1, 1, 0, 2, 1, 2}, false)));
  GradientChecker<TypeParam> checker(1e-2, 1e-3);
  checker.CheckGradientExhaustive(&layer, b, t);
}

TYPED_TEST(DeconvolutionLayerTest, Gradient1x1) {
  Blob<TypeParam> bottom({2, 3, 2, 2}), top;
  FillGaussian(&bottom, this->rng_);
  std::vector<Blob<TypeParam>*> b = {&bottom}, t = {&top};
  DeconvolutionLayer<TypeParam> layer(
      ParseText<LayerParameter>(DeconvText(2, {1, 1, 1, 1, 0, 0, 1, 1, 1})));
  GradientChecker<TypeParam> checker(1e-2, 1e-3);
  checker.CheckGradientExhaustive(&layer, b, t);
}

TYPED_TEST(DeconvolutionLayerTest, EmptyBatchIsFine) {
  Blob<TypeParam> bottom({0, 2, 3, 3}), top;
  std::vector<Blob<TypeParam>*> b = {&bottom}, t = {&top};
  DeconvolutionLayer<TypeParam> layer(
      ParseText<LayerParameter>(DeconvText(2, {3, 3, 2, 2, 1, 1, 1, 1, 1})));
  layer.SetUp(b, t);
  layer.Forward(b, t);
  EXPECT_EQ(top.shape(), std::vector<int>({0, 2, 5, 5}));
  layer.Backward(t, {true}, b);
}

TYPED_TEST(DeconvolutionLayerTest, RejectsBadParameters) {
  using ::testing::AllOf;
  using ::testing::HasSubstr;
  const auto err = [](const std::string& p, const std::vector<int>& shape) -> std::string {
    Blob<TypeParam> bottom(shape), top;
    std::vector<Blob<TypeParam>*> b = {&bottom}, t = {&top};
    DeconvolutionLayer<TypeParam> layer(ParseText<LayerParameter>(
        "name: 'bad_deconv' type: 'Deconvolution' convolution_param { " + p + " }"));
    try {
      layer.SetUp(b, t);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  const std::vector<int> shape = {1, 4, 3, 3};
  // 1 * (3 - 1) + 2 - 2 * 2 = 0.
  EXPECT_THAT(err("num_output: 2 kernel_size: 2 pad: 2", shape),
              AllOf(HasSubstr("layer 'bad_deconv' (Deconvolution)"), HasSubstr("padding")));
  EXPECT_THAT(err("num_output: 2 kernel_size: 2 group: 3", shape),
              AllOf(HasSubstr("bad_deconv"), HasSubstr("group")));
  EXPECT_THAT(err("num_output: 3 kernel_size: 2 group: 2", shape),
              AllOf(HasSubstr("bad_deconv"), HasSubstr("num_output")));
  EXPECT_THAT(err("num_output: 2 kernel_size: 2 kernel_size: 2 kernel_size: 2", shape),
              AllOf(HasSubstr("bad_deconv"), HasSubstr("kernel_size")));
  EXPECT_THAT(err("num_output: 2 kernel_size: 2", {1, 4, 0, 3}),
              AllOf(HasSubstr("bad_deconv"), HasSubstr("empty")));
}

}  // namespace doppio
