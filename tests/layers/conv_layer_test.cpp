#include "doppio/layers/conv_layer.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "doppio/util/thread_pool.hpp"
#include "gradient_checker.hpp"
#include "test_util.hpp"

namespace doppio {

namespace {

struct ConvSpec {
  int kernel_h, kernel_w, stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w, group;
};

// Direct convolution by its definition, for NCHW input.
template <typename Dtype>
void NaiveConvolution(const Blob<Dtype>& in, const Blob<Dtype>& weight, const Blob<Dtype>* bias,
                      const ConvSpec& s, Blob<Dtype>* out) {
  const int num = in.shape(0), channels = in.shape(1), height = in.shape(2), width = in.shape(3);
  const int outputs = weight.shape(0);
  const int out_h = out->shape(2), out_w = out->shape(3);
  const int in_per_group = channels / s.group, out_per_group = outputs / s.group;
  for (int n = 0; n < num; ++n)
    for (int o = 0; o < outputs; ++o) {
      const int g = o / out_per_group;
      for (int y = 0; y < out_h; ++y)
        for (int x = 0; x < out_w; ++x) {
          Dtype sum = bias ? bias->cpu_data()[o] : Dtype(0);
          for (int c = 0; c < in_per_group; ++c)
            for (int ki = 0; ki < s.kernel_h; ++ki)
              for (int kj = 0; kj < s.kernel_w; ++kj) {
                const int iy = y * s.stride_h - s.pad_h + ki * s.dilation_h;
                const int ix = x * s.stride_w - s.pad_w + kj * s.dilation_w;
                if (iy < 0 || iy >= height || ix < 0 || ix >= width) continue;
                sum += weight.data_at(o, c, ki, kj) * in.data_at(n, g * in_per_group + c, iy, ix);
              }
          out->mutable_cpu_data()[out->offset(n, o, y, x)] = sum;
        }
    }
}

// Forward and gradients by their definition: top = conv(in, W) + b, and with the top diff
// given, d in = sum over outputs of W * top diff, d W = sum over outputs of in * top diff,
// d b = sum of the top diff. Accumulated in double.
template <typename Dtype>
void NaiveConvolutionPass(const Blob<Dtype>& in, const Blob<Dtype>& weight, const Blob<Dtype>& bias,
                          const Blob<Dtype>& top_diff, const ConvSpec& s, std::vector<double>* top,
                          std::vector<double>* in_diff, std::vector<double>* weight_diff,
                          std::vector<double>* bias_diff) {
  const int num = in.shape(0), channels = in.shape(1), height = in.shape(2), width = in.shape(3);
  const int outputs = weight.shape(0);
  const int out_h = top_diff.shape(2), out_w = top_diff.shape(3);
  const int in_per_group = channels / s.group, out_per_group = outputs / s.group;
  const Dtype* x = in.cpu_data();
  const Dtype* w = weight.cpu_data();
  const Dtype* dy = top_diff.cpu_data();
  top->assign(top_diff.count(), 0);
  in_diff->assign(in.count(), 0);
  weight_diff->assign(weight.count(), 0);
  bias_diff->assign(outputs, 0);
  for (int n = 0; n < num; ++n)
    for (int o = 0; o < outputs; ++o) {
      const int g = o / out_per_group;
      for (int y = 0; y < out_h; ++y)
        for (int xo = 0; xo < out_w; ++xo) {
          const int out_index = ((n * outputs + o) * out_h + y) * out_w + xo;
          const double t = dy[out_index];
          double sum = bias.cpu_data()[o];
          (*bias_diff)[o] += t;
          for (int c = 0; c < in_per_group; ++c)
            for (int ki = 0; ki < s.kernel_h; ++ki) {
              const int iy = y * s.stride_h - s.pad_h + ki * s.dilation_h;
              if (iy < 0 || iy >= height) continue;
              for (int kj = 0; kj < s.kernel_w; ++kj) {
                const int ix = xo * s.stride_w - s.pad_w + kj * s.dilation_w;
                if (ix < 0 || ix >= width) continue;
                const int i = ((n * channels + g * in_per_group + c) * height + iy) * width + ix;
                const int k = ((o * in_per_group + c) * s.kernel_h + ki) * s.kernel_w + kj;
                sum += static_cast<double>(w[k]) * x[i];
                (*in_diff)[i] += w[k] * t;
                (*weight_diff)[k] += x[i] * t;
              }
            }
          (*top)[out_index] = sum;
        }
    }
}

// Expects `actual` to equal `expected` to a tolerance relative to the largest magnitude.
template <typename Dtype>
void ExpectClose(const std::vector<double>& expected, const Dtype* actual, double tolerance,
                 const std::string& what) {
  double scale = 1;
  for (double v : expected) scale = std::max(scale, std::abs(v));
  for (size_t i = 0; i < expected.size(); ++i) {
    ASSERT_NEAR(expected[i], actual[i], tolerance * scale) << what << " element " << i;
  }
}

std::string ConvText(int num_output, const ConvSpec& s, bool bias = true) {
  return "name: 'conv' type: 'Convolution' convolution_param { num_output: " +
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
class ConvolutionLayerTest : public ::testing::Test {
 protected:
  ConvolutionLayerTest() : bottom_(new Blob<Dtype>({2, 4, 6, 5})), top_(new Blob<Dtype>()) {
    FillGaussian(bottom_.get(), rng_);
    bottom_vec_ = {bottom_.get()};
    top_vec_ = {top_.get()};
  }

  void CheckAgainstNaive(int num_output, const ConvSpec& s, bool bias) {
    ConvolutionLayer<Dtype> layer(ParseText<LayerParameter>(ConvText(num_output, s, bias)));
    layer.SetUp(bottom_vec_, top_vec_);
    layer.Forward(bottom_vec_, top_vec_);
    Blob<Dtype> expected(top_->shape());
    NaiveConvolution(*bottom_, *layer.blobs()[0], bias ? layer.blobs()[1].get() : nullptr, s,
                     &expected);
    ASSERT_EQ(expected.count(), top_->count());
    for (int i = 0; i < top_->count(); ++i) {
      EXPECT_NEAR(expected.cpu_data()[i], top_->cpu_data()[i], 1e-4) << "element " << i;
    }
  }

  Rng rng_{1234};
  std::unique_ptr<Blob<Dtype>> bottom_, top_;
  std::vector<Blob<Dtype>*> bottom_vec_, top_vec_;
};

TYPED_TEST_SUITE(ConvolutionLayerTest, TestDtypes);

TYPED_TEST(ConvolutionLayerTest, HandComputedSmallCase) {
  // 3x3 image 1..9, one 2x2 filter [[1, 0], [0, -1]] and bias 0.5: each output is
  // x[i][j] - x[i+1][j+1] + 0.5 = -4 + 0.5. With pad 1 the corners see only one tap.
  Blob<TypeParam> bottom({1, 1, 3, 3});
  for (int i = 0; i < 9; ++i) bottom.mutable_cpu_data()[i] = i + 1;
  Blob<TypeParam> top;
  std::vector<Blob<TypeParam>*> b = {&bottom}, t = {&top};
  ConvolutionLayer<TypeParam> layer(ParseText<LayerParameter>(
      "name: 'c' type: 'Convolution' convolution_param { num_output: 1 kernel_size: 2 "
      "bias_filler { type: 'constant' value: 0.5 } }"));
  layer.SetUp(b, t);
  TypeParam* w = layer.blobs()[0]->mutable_cpu_data();
  w[0] = 1;
  w[1] = 0;
  w[2] = 0;
  w[3] = -1;
  layer.Forward(b, t);
  ASSERT_EQ(top.shape(), std::vector<int>({1, 1, 2, 2}));
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(top.cpu_data()[i], -3.5, 1e-6);

  // Padded, stride 2: 3x3 + pad 1 -> (3 + 2 - 2) / 2 + 1 = 2 outputs per axis; windows start at
  // -1 and 1. Output (0,0): only tap (1,1) -> -x[0][0] = -1. (0,1): x(-1,1) pad, -x[0][2] = -3.
  // (1,0): -x[2][0] = -7. (1,1): x[1][1] - x[2][2] = 5 - 9 = -4.
  ConvolutionLayer<TypeParam> padded(ParseText<LayerParameter>(
      "name: 'c' type: 'Convolution' convolution_param { num_output: 1 kernel_size: 2 "
      "pad: 1 stride: 2 bias_term: false }"));
  padded.SetUp(b, t);
  w = padded.blobs()[0]->mutable_cpu_data();
  w[0] = 1;
  w[1] = 0;
  w[2] = 0;
  w[3] = -1;
  padded.Forward(b, t);
  ASSERT_EQ(top.shape(), std::vector<int>({1, 1, 2, 2}));
  const TypeParam expected[4] = {-1, -3, -7, -4};
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(top.cpu_data()[i], expected[i], 1e-6) << i;
}

TYPED_TEST(ConvolutionLayerTest, MatchesNaiveConvolution) {
  this->CheckAgainstNaive(3, {3, 3, 1, 1, 0, 0, 1, 1, 1}, true);   // plain
  this->CheckAgainstNaive(4, {3, 3, 2, 2, 1, 1, 1, 1, 1}, true);   // stride and pad
  this->CheckAgainstNaive(6, {3, 2, 1, 2, 1, 0, 1, 1, 2}, true);   // grouped, anisotropic
  this->CheckAgainstNaive(4, {3, 3, 1, 1, 2, 2, 2, 2, 4}, false);  // dilated, depthwise
  this->CheckAgainstNaive(2, {2, 2, 1, 1, 1, 0, 2, 1, 2}, true);   // dilation in h only
  this->CheckAgainstNaive(5, {1, 1, 1, 1, 0, 0, 1, 1, 1}, true);   // 1x1 (no im2col)
  this->CheckAgainstNaive(4, {1, 1, 2, 2, 0, 0, 1, 1, 2}, true);   // 1x1 strided, grouped
}

TYPED_TEST(ConvolutionLayerTest, ShapesFromRepeatedFields) {
  ConvolutionLayer<TypeParam> layer(ParseText<LayerParameter>(
      "name: 'c' type: 'Convolution' convolution_param { num_output: 3 kernel_size: 3 "
      "kernel_size: 2 stride: 2 stride: 1 pad: 1 pad: 0 dilation: 1 }"));
  layer.SetUp(this->bottom_vec_, this->top_vec_);
  // h: (6 + 2 - 3) / 2 + 1 = 3; w: (5 - 2) / 1 + 1 = 4.
  EXPECT_EQ(this->top_->shape(), std::vector<int>({2, 3, 3, 4}));
  EXPECT_EQ(layer.blobs()[0]->shape(), std::vector<int>({3, 4, 3, 2}));
  EXPECT_EQ(layer.blobs()[1]->shape(), std::vector<int>({3}));
}

TYPED_TEST(ConvolutionLayerTest, MultipleBottomsShareWeights) {
  Blob<TypeParam> bottom2(this->bottom_->shape()), top2;
  FillGaussian(&bottom2, this->rng_);
  std::vector<Blob<TypeParam>*> b = {this->bottom_.get(), &bottom2};
  std::vector<Blob<TypeParam>*> t = {this->top_.get(), &top2};
  const ConvSpec s{3, 3, 1, 1, 1, 1, 1, 1, 2};
  ConvolutionLayer<TypeParam> layer(ParseText<LayerParameter>(ConvText(4, s)));
  layer.SetUp(b, t);
  layer.Forward(b, t);
  Blob<TypeParam> expected(top2.shape());
  NaiveConvolution(bottom2, *layer.blobs()[0], layer.blobs()[1].get(), s, &expected);
  for (int i = 0; i < top2.count(); ++i) {
    EXPECT_NEAR(expected.cpu_data()[i], top2.cpu_data()[i], 1e-4);
  }
}

TYPED_TEST(ConvolutionLayerTest, ChannelAxisZero) {
  // A (C, H, W) input with axis 0 is one image.
  Blob<TypeParam> chw({4, 6, 5}), top;
  cpu_copy(chw.count(), this->bottom_->cpu_data(), chw.mutable_cpu_data());
  std::vector<Blob<TypeParam>*> b = {&chw}, t = {&top};
  ConvolutionLayer<TypeParam> layer(ParseText<LayerParameter>(
      "name: 'c' type: 'Convolution' convolution_param { num_output: 2 kernel_size: 3 axis: 0 "
      "weight_filler { type: 'gaussian' } bias_filler { type: 'gaussian' } }"));
  layer.SetUp(b, t);
  layer.Forward(b, t);
  ASSERT_EQ(top.shape(), std::vector<int>({2, 4, 3}));
  Blob<TypeParam> expected({1, 2, 4, 3}), nchw({1, 4, 6, 5});
  cpu_copy(chw.count(), chw.cpu_data(), nchw.mutable_cpu_data());
  NaiveConvolution(nchw, *layer.blobs()[0], layer.blobs()[1].get(), {3, 3, 1, 1, 0, 0, 1, 1, 1},
                   &expected);
  for (int i = 0; i < top.count(); ++i) {
    EXPECT_NEAR(expected.cpu_data()[i], top.cpu_data()[i], 1e-4);
  }
}

TYPED_TEST(ConvolutionLayerTest, GivenWeightsAreKept) {
  LayerParameter param = ParseText<LayerParameter>(
      "name: 'c' type: 'Convolution' convolution_param { num_output: 1 kernel_size: 1 "
      "bias_term: false }");
  BlobProto* w = param.add_blobs();
  w->mutable_shape()->add_dim(1);
  w->mutable_shape()->add_dim(4);
  w->mutable_shape()->add_dim(1);
  w->mutable_shape()->add_dim(1);
  for (int i = 0; i < 4; ++i) w->add_data(1);
  ConvolutionLayer<TypeParam> layer(param);
  layer.SetUp(this->bottom_vec_, this->top_vec_);
  layer.Forward(this->bottom_vec_, this->top_vec_);
  // Sum over channels.
  const Blob<TypeParam>& in = *this->bottom_;
  EXPECT_NEAR(this->top_->data_at(1, 0, 2, 3),
              in.data_at(1, 0, 2, 3) + in.data_at(1, 1, 2, 3) + in.data_at(1, 2, 2, 3) +
                  in.data_at(1, 3, 2, 3),
              1e-5);

  LayerParameter wrong = param;
  wrong.mutable_blobs(0)->mutable_shape()->set_dim(1, 2);
  wrong.mutable_blobs(0)->mutable_data()->Truncate(2);
  ConvolutionLayer<TypeParam> bad(wrong);
  EXPECT_THROW(bad.SetUp(this->bottom_vec_, this->top_vec_), Error);
}

TYPED_TEST(ConvolutionLayerTest, ParameterGradientsAccumulate) {
  ConvolutionLayer<TypeParam> layer(
      ParseText<LayerParameter>(ConvText(2, {3, 3, 1, 1, 1, 1, 1, 1, 1})));
  layer.SetUp(this->bottom_vec_, this->top_vec_);
  layer.Forward(this->bottom_vec_, this->top_vec_);
  FillGaussian(this->top_.get(), this->rng_);
  cpu_copy(this->top_->count(), this->top_->cpu_data(), this->top_->mutable_cpu_diff());
  for (auto& blob : layer.blobs()) cpu_set(blob->count(), TypeParam(0), blob->mutable_cpu_diff());
  layer.Backward(this->top_vec_, {true}, this->bottom_vec_);
  std::vector<TypeParam> once(layer.blobs()[0]->cpu_diff(),
                              layer.blobs()[0]->cpu_diff() + layer.blobs()[0]->count());
  const TypeParam bias_once = layer.blobs()[1]->cpu_diff()[1];
  std::vector<TypeParam> bottom_once(this->bottom_->cpu_diff(),
                                     this->bottom_->cpu_diff() + this->bottom_->count());
  layer.Backward(this->top_vec_, {true}, this->bottom_vec_);
  for (size_t i = 0; i < once.size(); ++i) {
    EXPECT_NEAR(2 * once[i], layer.blobs()[0]->cpu_diff()[i], 1e-4);
  }
  EXPECT_NEAR(2 * bias_once, layer.blobs()[1]->cpu_diff()[1], 1e-4);
  // The bottom diff is overwritten, not accumulated.
  for (size_t i = 0; i < bottom_once.size(); ++i) {
    EXPECT_NEAR(bottom_once[i], this->bottom_->cpu_diff()[i], 1e-5);
  }
}

TYPED_TEST(ConvolutionLayerTest, BatchedAndPerImageGemmsAgree) {
  // However the layer groups images into GEMMs (see EveryGemmPath... below), the results
  // must equal running every image through its own layer with the same weights.
  for (const std::string kernel : {"kernel_size: 3 pad: 1 group: 2", "kernel_size: 1"}) {
    const std::string text = "name: 'c' type: 'Convolution' convolution_param { num_output: 4 " +
                             kernel +
                             " weight_filler { type: 'gaussian' } bias_filler { type: "
                             "'gaussian' } }";
    Blob<TypeParam> bottom({8, 2, 10, 10}), top;
    FillGaussian(&bottom, this->rng_);
    std::vector<Blob<TypeParam>*> b = {&bottom}, t = {&top};
    ConvolutionLayer<TypeParam> layer(ParseText<LayerParameter>(text));
    layer.SetUp(b, t);
    layer.Forward(b, t);
    FillGaussian(&top, this->rng_);
    cpu_copy(top.count(), top.cpu_data(), top.mutable_cpu_diff());
    for (auto& blob : layer.blobs()) cpu_set(blob->count(), TypeParam(0), blob->mutable_cpu_diff());
    layer.Forward(b, t);
    layer.Backward(t, {true}, b);

    std::vector<TypeParam> weight_diff(layer.blobs()[0]->count(), 0);
    std::vector<TypeParam> bias_diff(4, 0);
    for (int n = 0; n < 8; ++n) {
      Blob<TypeParam> one({1, 2, 10, 10}), one_top;
      cpu_copy(one.count(), bottom.cpu_data() + bottom.offset(n), one.mutable_cpu_data());
      std::vector<Blob<TypeParam>*> ob = {&one}, ot = {&one_top};
      ConvolutionLayer<TypeParam> single(ParseText<LayerParameter>(text));
      single.SetUp(ob, ot);
      for (int k = 0; k < 2; ++k) {
        single.blobs()[k]->CopyFrom(*layer.blobs()[k]);
        cpu_set(single.blobs()[k]->count(), TypeParam(0), single.blobs()[k]->mutable_cpu_diff());
      }
      single.Forward(ob, ot);
      for (int i = 0; i < one_top.count(); ++i) {
        ASSERT_NEAR(one_top.cpu_data()[i], top.cpu_data()[top.offset(n) + i], 1e-4) << kernel;
      }
      cpu_copy(one_top.count(), top.cpu_diff() + top.offset(n), one_top.mutable_cpu_diff());
      single.Backward(ot, {true}, ob);
      for (int i = 0; i < one.count(); ++i) {
        ASSERT_NEAR(one.cpu_diff()[i], bottom.cpu_diff()[bottom.offset(n) + i], 1e-4) << kernel;
      }
      for (size_t i = 0; i < weight_diff.size(); ++i) {
        weight_diff[i] += single.blobs()[0]->cpu_diff()[i];
      }
      for (int i = 0; i < 4; ++i) bias_diff[i] += single.blobs()[1]->cpu_diff()[i];
    }
    for (size_t i = 0; i < weight_diff.size(); ++i) {
      EXPECT_NEAR(weight_diff[i], layer.blobs()[0]->cpu_diff()[i],
                  1e-3 * std::max<TypeParam>(1, std::abs(weight_diff[i])))
          << kernel;
    }
    for (int i = 0; i < 4; ++i) {
      EXPECT_NEAR(bias_diff[i], layer.blobs()[1]->cpu_diff()[i],
                  1e-3 * std::max<TypeParam>(1, std::abs(bias_diff[i])));
    }
  }
}

// The shapes that take each of the layer's GEMM strategies (see BaseConvolutionLayer::Reshape):
// small filters (at most 64 out channels per group, and out channels x in channels x kernel
// area per group up to 62500) run one image at a time in blocks of columns; larger ones batch
// images with small outputs into one GEMM, or run one image at a time when outputs are wide
// (256 positions or more).
struct PathCase {
  const char* name;
  std::vector<int> shape;  // bottom N, C, H, W
  int num_output;
  ConvSpec spec;
};

std::vector<PathCase> PathCases() {
  return {
      // CIFAR-10's conv2: 32 x 800 filters, 16x16 outputs in blocks of 32 columns.
      {"small filters, many blocks", {3, 32, 16, 16}, 32, {5, 5, 1, 1, 2, 2, 1, 1, 1}},
      {"small filters, strided and grouped", {3, 8, 13, 11}, 6, {3, 3, 2, 2, 1, 1, 1, 1, 2}},
      {"small filters, 1x1", {3, 16, 9, 9}, 8, {1, 1, 1, 1, 0, 0, 1, 1, 1}},
      // 64 x 1152 filters: images with 6x6 outputs share GEMMs.
      {"large filters, batched", {3, 128, 6, 6}, 64, {3, 3, 1, 1, 1, 1, 1, 1, 1}},
      // 64 x 1152 filters, 16x16 outputs: one image at a time.
      {"large filters, per image", {2, 128, 16, 16}, 64, {3, 3, 1, 1, 1, 1, 1, 1, 1}},
      {"large filters, 1x1 batched", {3, 512, 4, 4}, 128, {1, 1, 1, 1, 0, 0, 1, 1, 1}},
  };
}

// Forward and backward of one PathCase on a fresh layer; returns top, bottom diff and the
// parameter diffs, all after one pass from zeroed parameter diffs.
template <typename Dtype>
struct PassResult {
  std::vector<Dtype> top, bottom_diff, weight_diff, bias_diff;
};

template <typename Dtype>
PassResult<Dtype> RunPass(const PathCase& c, const Blob<Dtype>& bottom_in,
                          const Blob<Dtype>& top_diff, const Blob<Dtype>& weight,
                          const Blob<Dtype>& bias) {
  Blob<Dtype> bottom(c.shape), top;
  bottom.CopyFrom(bottom_in);
  std::vector<Blob<Dtype>*> b = {&bottom}, t = {&top};
  ConvolutionLayer<Dtype> layer(ParseText<LayerParameter>(ConvText(c.num_output, c.spec)));
  layer.SetUp(b, t);
  layer.blobs()[0]->CopyFrom(weight);
  layer.blobs()[1]->CopyFrom(bias);
  for (auto& blob : layer.blobs()) cpu_set(blob->count(), Dtype(0), blob->mutable_cpu_diff());
  layer.Forward(b, t);
  cpu_copy(top.count(), top_diff.cpu_data(), top.mutable_cpu_diff());
  layer.Backward(t, {true}, b);
  PassResult<Dtype> r;
  r.top.assign(top.cpu_data(), top.cpu_data() + top.count());
  r.bottom_diff.assign(bottom.cpu_diff(), bottom.cpu_diff() + bottom.count());
  const Blob<Dtype>& w = *layer.blobs()[0];
  const Blob<Dtype>& bi = *layer.blobs()[1];
  r.weight_diff.assign(w.cpu_diff(), w.cpu_diff() + w.count());
  r.bias_diff.assign(bi.cpu_diff(), bi.cpu_diff() + bi.count());
  return r;
}

TYPED_TEST(ConvolutionLayerTest, EveryGemmPathMatchesTheDefinitionSeriallyAndThreaded) {
  const double tolerance = std::is_same<TypeParam, float>::value ? 1e-5 : 1e-12;
  for (const PathCase& c : PathCases()) {
    SCOPED_TRACE(c.name);
    Blob<TypeParam> bottom(c.shape);
    FillGaussian(&bottom, this->rng_);
    // Shapes and parameters from a layer set up once.
    Blob<TypeParam> top;
    std::vector<Blob<TypeParam>*> b = {&bottom}, t = {&top};
    ConvolutionLayer<TypeParam> shaper(ParseText<LayerParameter>(ConvText(c.num_output, c.spec)));
    shaper.SetUp(b, t);
    Blob<TypeParam>& weight = *shaper.blobs()[0];
    Blob<TypeParam>& bias = *shaper.blobs()[1];
    Blob<TypeParam> top_diff(top.shape());
    FillGaussian(&top_diff, this->rng_);

    std::vector<double> expected_top, in_diff, weight_diff, bias_diff;
    NaiveConvolutionPass(bottom, weight, bias, top_diff, c.spec, &expected_top, &in_diff,
                         &weight_diff, &bias_diff);

    const PassResult<TypeParam> serial = RunPass(c, bottom, top_diff, weight, bias);
    ExpectClose(expected_top, serial.top.data(), tolerance, "top");
    ExpectClose(in_diff, serial.bottom_diff.data(), tolerance, "bottom diff");
    ExpectClose(weight_diff, serial.weight_diff.data(), tolerance, "weight diff");
    ExpectClose(bias_diff, serial.bias_diff.data(), tolerance, "bias diff");

    for (int threads : {2, 3, 8}) {
      SCOPED_TRACE(std::to_string(threads) + " threads");
      ThreadPool pool(threads);
      ThreadPool::Scope use(&pool);
      const PassResult<TypeParam> threaded = RunPass(c, bottom, top_diff, weight, bias);
      // The thread count changes how many images share a GEMM, and BLAS kernels may round
      // a column differently at another position or width (OpenBLAS's Haswell kernels on
      // AMD EPYC do), and parameter gradients are summed in per-thread partial sums: so
      // across thread counts the results agree up to rounding, not bit for bit.
      ExpectClose(expected_top, threaded.top.data(), tolerance, "top");
      ExpectClose(in_diff, threaded.bottom_diff.data(), tolerance, "bottom diff");
      ExpectClose(weight_diff, threaded.weight_diff.data(), tolerance, "weight diff");
      ExpectClose(bias_diff, threaded.bias_diff.data(), tolerance, "bias diff");
      // For one thread count the partition and the order of summation are fixed: a second
      // pass gives the same bits.
      const PassResult<TypeParam> again = RunPass(c, bottom, top_diff, weight, bias);
      EXPECT_EQ(threaded.top, again.top);
      EXPECT_EQ(threaded.bottom_diff, again.bottom_diff);
      EXPECT_EQ(threaded.weight_diff, again.weight_diff);
      EXPECT_EQ(threaded.bias_diff, again.bias_diff);
    }
  }
}

TYPED_TEST(ConvolutionLayerTest, GradientStridedPadded) {
  Blob<TypeParam> bottom({2, 3, 5, 4}), top;
  FillGaussian(&bottom, this->rng_);
  std::vector<Blob<TypeParam>*> b = {&bottom}, t = {&top};
  ConvolutionLayer<TypeParam> layer(
      ParseText<LayerParameter>(ConvText(2, {3, 2, 2, 1, 1, 1, 1, 1, 1})));
  GradientChecker<TypeParam> checker(1e-2, 1e-3);
  checker.CheckGradientExhaustive(&layer, b, t);
}

TYPED_TEST(ConvolutionLayerTest, GradientGroupedDilated) {
  Blob<TypeParam> bottom({2, 4, 5, 5}), top;
  FillGaussian(&bottom, this->rng_);
  std::vector<Blob<TypeParam>*> b = {&bottom}, t = {&top};
  ConvolutionLayer<TypeParam> layer(
      ParseText<LayerParameter>(ConvText(4, {2, 2, 1, 2, 1, 0, 2, 1, 2})));
  GradientChecker<TypeParam> checker(1e-2, 1e-3);
  checker.CheckGradientExhaustive(&layer, b, t);
}

TYPED_TEST(ConvolutionLayerTest, GradientNoBiasTwoBottoms) {
  Blob<TypeParam> bottom({1, 2, 4, 4}), bottom2({1, 2, 4, 4}), top, top2;
  FillGaussian(&bottom, this->rng_);
  FillGaussian(&bottom2, this->rng_);
  std::vector<Blob<TypeParam>*> b = {&bottom, &bottom2}, t = {&top, &top2};
  ConvolutionLayer<TypeParam> layer(
      ParseText<LayerParameter>(ConvText(3, {3, 3, 1, 1, 1, 1, 1, 1, 1}, false)));
  GradientChecker<TypeParam> checker(1e-2, 1e-3);
  checker.CheckGradientExhaustive(&layer, b, t);
}

TYPED_TEST(ConvolutionLayerTest, Gradient1x1) {
  Blob<TypeParam> bottom({2, 3, 3, 2}), top;
  FillGaussian(&bottom, this->rng_);
  std::vector<Blob<TypeParam>*> b = {&bottom}, t = {&top};
  ConvolutionLayer<TypeParam> layer(
      ParseText<LayerParameter>(ConvText(4, {1, 1, 1, 1, 0, 0, 1, 1, 1})));
  GradientChecker<TypeParam> checker(1e-2, 1e-3);
  checker.CheckGradientExhaustive(&layer, b, t);
}

namespace {

// Sets up a Convolution layer from text on the given bottom; returns the Error message
// ("" when no error was thrown).
template <typename Dtype>
std::string SetUpError(const std::string& conv_param, const std::vector<int>& shape) {
  Blob<Dtype> bottom(shape), top;
  std::vector<Blob<Dtype>*> b = {&bottom}, t = {&top};
  ConvolutionLayer<Dtype> layer(ParseText<LayerParameter>(
      "name: 'bad_conv' type: 'Convolution' convolution_param { " + conv_param + " }"));
  try {
    layer.SetUp(b, t);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TYPED_TEST(ConvolutionLayerTest, RejectsBadParameters) {
  using ::testing::AllOf;
  using ::testing::HasSubstr;
  const std::vector<int> shape = {2, 4, 6, 5};
  const auto err = [&](const std::string& p, const std::vector<int>& s) {
    return SetUpError<TypeParam>(p, s);
  };
  EXPECT_THAT(err("num_output: 2 kernel_size: 7", shape),
              AllOf(HasSubstr("layer 'bad_conv' (Convolution)"),
                    HasSubstr("larger than the padded"), HasSubstr("7"), HasSubstr("6")));
  EXPECT_THAT(err("num_output: 2 kernel_size: 3 dilation: 3", shape),
              AllOf(HasSubstr("bad_conv"), HasSubstr("larger than the padded")));
  EXPECT_THAT(err("num_output: 2 kernel_size: 3 group: 3", shape),
              AllOf(HasSubstr("bad_conv"), HasSubstr("group")));
  EXPECT_THAT(err("num_output: 3 kernel_size: 3 group: 2", shape),
              AllOf(HasSubstr("bad_conv"), HasSubstr("num_output"), HasSubstr("group")));
  EXPECT_THAT(err("num_output: 2 kernel_size: 3 kernel_size: 3 kernel_size: 3", shape),
              AllOf(HasSubstr("bad_conv"), HasSubstr("kernel_size")));
  EXPECT_THAT(err("num_output: 2 kernel_size: 3", {2, 4, 6, 5, 5}),
              AllOf(HasSubstr("bad_conv"), HasSubstr("spatial axes"), HasSubstr("axis")));
  EXPECT_THAT(err("num_output: 2 kernel_size: 3 force_nd_im2col: true", shape),
              AllOf(HasSubstr("bad_conv"), HasSubstr("force_nd_im2col")));
  EXPECT_THAT(err("num_output: 2 kernel_size: 0", shape),
              AllOf(HasSubstr("bad_conv"), HasSubstr("kernel")));
  EXPECT_THAT(err("num_output: 2 kernel_size: 3 stride: 0", shape),
              AllOf(HasSubstr("bad_conv"), HasSubstr("stride")));
  EXPECT_THAT(err("num_output: 2 kernel_size: 3 dilation: 0", shape),
              AllOf(HasSubstr("bad_conv"), HasSubstr("dilation")));
  EXPECT_THAT(err("num_output: 0 kernel_size: 3", shape),
              AllOf(HasSubstr("bad_conv"), HasSubstr("num_output")));
  EXPECT_THAT(err("num_output: 2", shape), AllOf(HasSubstr("bad_conv"), HasSubstr("kernel_size")));
  EXPECT_THAT(err("num_output: 2 kernel_size: 3 kernel_h: 3 kernel_w: 3", shape),
              AllOf(HasSubstr("bad_conv"), HasSubstr("kernel_h")));
  EXPECT_THAT(err("num_output: 2 kernel_h: 3", shape),
              AllOf(HasSubstr("bad_conv"), HasSubstr("kernel_w")));
  EXPECT_THAT(err("num_output: 2 kernel_size: 3 pad: 1 pad_h: 1 pad_w: 1", shape),
              AllOf(HasSubstr("bad_conv"), HasSubstr("pad")));
  EXPECT_THAT(err("num_output: 2 kernel_size: 3 axis: 4", shape),
              AllOf(HasSubstr("bad_conv"), HasSubstr("axis")));
  // Zero dimensions.
  EXPECT_THAT(err("num_output: 2 kernel_size: 1", {2, 0, 6, 5}),
              AllOf(HasSubstr("bad_conv"), HasSubstr("channels")));
  EXPECT_THAT(err("num_output: 2 kernel_size: 1", {2, 4, 0, 5}),
              AllOf(HasSubstr("bad_conv"), HasSubstr("empty spatial axis")));
  // A padded input is large enough even when the kernel exceeds the raw input.
  EXPECT_EQ(err("num_output: 2 kernel_size: 7 pad: 1", shape), "");
}

TYPED_TEST(ConvolutionLayerTest, EmptyBatchIsFine) {
  Blob<TypeParam> bottom({0, 4, 6, 5}), top;
  std::vector<Blob<TypeParam>*> b = {&bottom}, t = {&top};
  ConvolutionLayer<TypeParam> layer(
      ParseText<LayerParameter>(ConvText(2, {3, 3, 1, 1, 1, 1, 1, 1, 1})));
  layer.SetUp(b, t);
  layer.Forward(b, t);
  EXPECT_EQ(top.shape(), std::vector<int>({0, 2, 6, 5}));
  cpu_set(layer.blobs()[0]->count(), TypeParam(0), layer.blobs()[0]->mutable_cpu_diff());
  layer.Backward(t, {true}, b);
  EXPECT_EQ(layer.blobs()[0]->asum_diff(), 0);
}

TYPED_TEST(ConvolutionLayerTest, ReshapeRejectsChangedChannels) {
  ConvolutionLayer<TypeParam> layer(
      ParseText<LayerParameter>(ConvText(2, {3, 3, 1, 1, 1, 1, 1, 1, 1})));
  layer.SetUp(this->bottom_vec_, this->top_vec_);
  this->bottom_->Reshape({2, 3, 6, 5});
  try {
    layer.Forward(this->bottom_vec_, this->top_vec_);
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("layer 'conv'"));
  }
  // A different spatial size is fine.
  this->bottom_->Reshape({1, 4, 8, 9});
  layer.Forward(this->bottom_vec_, this->top_vec_);
  EXPECT_EQ(this->top_->shape(), std::vector<int>({1, 2, 8, 9}));
}

}  // namespace doppio
