#include "doppio/layers/rnn_layer.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "doppio/core/layer_registry.hpp"
#include "gradient_checker.hpp"
#include "test_util.hpp"

namespace doppio {

namespace {

LayerParameter RNNParam(int num_output, bool expose_hidden = false) {
  return ParseText<LayerParameter>(
      "name: 'rnn' type: 'RNN' recurrent_param { num_output: " + std::to_string(num_output) +
      " weight_filler { type: 'uniform' min: -0.5 max: 0.5 } bias_filler { type: 'uniform' "
      "min: -0.5 max: 0.5 } expose_hidden: " +
      (expose_hidden ? "true" : "false") + " }");
}

// Caffe's RNN step by step from the layer's weights (W_xh, b_h, W_hh, W_ho, b_o): o over all
// steps, then the final h. h starts from h0.
template <typename Dtype>
std::vector<double> ReferenceRNN(Layer<Dtype>& layer, const Blob<Dtype>& x, const Blob<Dtype>& cont,
                                 std::vector<double> h) {
  const int T = x.shape(0), N = x.shape(1), I = x.count(2);
  const int H = static_cast<int>(h.size()) / N;
  const Dtype* W_xh = layer.blobs()[0]->cpu_data();
  const Dtype* b_h = layer.blobs()[1]->cpu_data();
  const Dtype* W_hh = layer.blobs()[2]->cpu_data();
  const Dtype* W_ho = layer.blobs()[3]->cpu_data();
  const Dtype* b_o = layer.blobs()[4]->cpu_data();
  std::vector<double> out;
  for (int t = 0; t < T; ++t) {
    std::vector<double> h_next(N * H);
    for (int n = 0; n < N; ++n) {
      const double k = cont.cpu_data()[t * N + n];
      for (int d = 0; d < H; ++d) {
        double sum = b_h[d];
        for (int i = 0; i < I; ++i) sum += W_xh[d * I + i] * x.cpu_data()[(t * N + n) * I + i];
        for (int j = 0; j < H; ++j) sum += W_hh[d * H + j] * k * h[n * H + j];
        h_next[n * H + d] = std::tanh(sum);
      }
    }
    h = h_next;
    for (int n = 0; n < N; ++n) {
      for (int d = 0; d < H; ++d) {
        double sum = b_o[d];
        for (int j = 0; j < H; ++j) sum += W_ho[d * H + j] * h[n * H + j];
        out.push_back(std::tanh(sum));
      }
    }
  }
  out.insert(out.end(), h.begin(), h.end());
  return out;
}

}  // namespace

template <typename Dtype>
class RNNLayerTest : public ::testing::Test {};
TYPED_TEST_SUITE(RNNLayerTest, TestDtypes);

TYPED_TEST(RNNLayerTest, ParametersInCaffesOrder) {
  using Dtype = TypeParam;
  RNNLayer<Dtype> layer(RNNParam(3));
  Blob<Dtype> x({4, 2, 5}), cont({4, 2}), x_static({2, 6}), o;
  layer.SetUp({&x, &cont, &x_static}, {&o});
  EXPECT_EQ(o.shape(), (std::vector<int>{4, 2, 3}));
  const std::vector<std::vector<int>> shapes = {{3, 5}, {3}, {3, 6}, {3, 3}, {3, 3}, {3}};
  ASSERT_EQ(layer.blobs().size(), shapes.size());  // W_xh b_h W_xh_static W_hh W_ho b_o
  for (std::size_t b = 0; b < shapes.size(); ++b) {
    EXPECT_EQ(layer.blobs()[b]->shape(), shapes[b]) << "blob " << b;
  }
}

TYPED_TEST(RNNLayerTest, ForwardMatchesTheStepByStepReference) {
  using Dtype = TypeParam;
  RNNLayer<Dtype> layer(RNNParam(3, true));
  Rng rng(22);
  Blob<Dtype> x({4, 2, 5}), cont({4, 2}), h0({1, 2, 3}), o, hT;
  FillGaussian<Dtype>(&x, rng);
  FillGaussian<Dtype>(&h0, rng);
  SetValues(&cont, {1, 0, 1, 1, 0, 1, 1, 1});
  layer.SetUp({&x, &cont, &h0}, {&o, &hT});
  layer.Forward({&x, &cont, &h0}, {&o, &hT});
  const std::vector<double> expected =
      ReferenceRNN(layer, x, cont, std::vector<double>(h0.cpu_data(), h0.cpu_data() + 6));
  for (int i = 0; i < o.count(); ++i) EXPECT_NEAR(o.cpu_data()[i], expected[i], 1e-5) << i;
  for (int i = 0; i < hT.count(); ++i) {
    EXPECT_NEAR(hT.cpu_data()[i], expected[o.count() + i], 1e-5) << "h_T " << i;
  }
}

TYPED_TEST(RNNLayerTest, Gradient) {
  using Dtype = TypeParam;
  RNNLayer<Dtype> layer(RNNParam(2));
  Rng rng(23);
  Blob<Dtype> x({3, 2, 3}), cont({3, 2}), o;
  FillGaussian<Dtype>(&x, rng);
  SetValues(&cont, {0, 0, 1, 0, 1, 1});
  GradientChecker<Dtype> checker(1e-3, 1e-2);
  checker.CheckGradientExhaustive(&layer, {&x, &cont}, {&o}, 0);
}

TYPED_TEST(RNNLayerTest, GradientStaticInputAndExposedHidden) {
  using Dtype = TypeParam;
  RNNLayer<Dtype> layer(RNNParam(2, true));
  Rng rng(24);
  Blob<Dtype> x({3, 2, 3}), cont({3, 2}), x_static({2, 4}), h0({1, 2, 2}), o, hT;
  for (Blob<Dtype>* b : {&x, &x_static, &h0}) FillGaussian<Dtype>(b, rng);
  SetValues(&cont, {1, 0, 1, 1, 1, 1});
  GradientChecker<Dtype> checker(1e-3, 1e-2);
  layer.SetUp({&x, &cont, &x_static, &h0}, {&o, &hT});
  for (int bottom : {0, 2, 3}) {
    checker.CheckGradientSingle(&layer, {&x, &cont, &x_static, &h0}, {&o, &hT}, bottom, -1, -1,
                                false);
  }
}

TEST(RNNLayerErrorTest, BadInputsNameTheLayer) {
  auto layer = LayerRegistry<float>::CreateLayer(RNNParam(2));
  Blob<float> x({3, 2, 4}), cont({3, 2}), o, x_static({3, 5});
  ExpectError(
      [&] {
        layer->SetUp({&x, &cont, &x_static}, {&o});
      },
      {"layer 'rnn' (RNN)", "static input (bottom 2)", "2 streams"});
  Blob<float> flat({3});
  ExpectError(
      [&] {
        LayerRegistry<float>::CreateLayer(RNNParam(2))->SetUp({&flat, &cont}, {&o});
      },
      {"layer 'rnn' (RNN)", "at least 2 axes"});
}

}  // namespace doppio
