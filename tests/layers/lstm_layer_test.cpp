#include "doppio/layers/lstm_layer.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <vector>

#include "doppio/core/layer_registry.hpp"
#include "doppio/core/net.hpp"
#include "gradient_checker.hpp"
#include "test_util.hpp"

namespace doppio {

namespace {

LayerParameter LSTMParam(int num_output, bool expose_hidden = false) {
  return ParseText<LayerParameter>(
      "name: 'lstm' type: 'LSTM' recurrent_param { num_output: " + std::to_string(num_output) +
      " weight_filler { type: 'uniform' min: -0.5 max: 0.5 } bias_filler { type: 'uniform' "
      "min: -0.5 max: 0.5 } expose_hidden: " +
      (expose_hidden ? "true" : "false") + " }");
}

double Sigmoid(double x) { return 1 / (1 + std::exp(-x)); }

// Caffe's LSTM written out step by step from the layer's weights (W_xc, b_c, W_hc): h over
// all steps, and the final h and c. h and c start from h0 and c0.
template <typename Dtype>
void ReferenceLSTM(Layer<Dtype>& layer, const Blob<Dtype>& x, const Blob<Dtype>& cont,
                   std::vector<double> h, std::vector<double> c, std::vector<double>* out) {
  const int T = x.shape(0), N = x.shape(1), I = x.count(2);
  const int H = static_cast<int>(h.size()) / N;
  const Dtype* W_xc = layer.blobs()[0]->cpu_data();
  const Dtype* b_c = layer.blobs()[1]->cpu_data();
  const Dtype* W_hc = layer.blobs()[2]->cpu_data();
  out->clear();
  for (int t = 0; t < T; ++t) {
    std::vector<double> h_next(N * H), c_next(N * H);
    for (int n = 0; n < N; ++n) {
      const double k = cont.cpu_data()[t * N + n];
      std::vector<double> gate(4 * H);
      for (int g = 0; g < 4 * H; ++g) {
        double sum = b_c[g];
        for (int i = 0; i < I; ++i) sum += W_xc[g * I + i] * x.cpu_data()[(t * N + n) * I + i];
        for (int j = 0; j < H; ++j) sum += W_hc[g * H + j] * k * h[n * H + j];
        gate[g] = sum;
      }
      for (int d = 0; d < H; ++d) {
        const double in = Sigmoid(gate[d]);
        const double forget = k == 0 ? 0 : k * Sigmoid(gate[H + d]);
        const double output = Sigmoid(gate[2 * H + d]);
        const double candidate = std::tanh(gate[3 * H + d]);
        c_next[n * H + d] = forget * c[n * H + d] + in * candidate;
        h_next[n * H + d] = output * std::tanh(c_next[n * H + d]);
      }
    }
    h = h_next;
    c = c_next;
    out->insert(out->end(), h.begin(), h.end());
  }
  out->insert(out->end(), h.begin(), h.end());
  out->insert(out->end(), c.begin(), c.end());
}

template <typename Dtype>
void ExpectNear(const Dtype* actual, const std::vector<double>& expected, int offset, int count,
                const std::string& what) {
  for (int i = 0; i < count; ++i) {
    EXPECT_NEAR(actual[i], expected[offset + i], 1e-5) << what << " element " << i;
  }
}

}  // namespace

template <typename Dtype>
class LSTMLayerTest : public ::testing::Test {};
TYPED_TEST_SUITE(LSTMLayerTest, TestDtypes);

TYPED_TEST(LSTMLayerTest, ParametersInCaffesOrder) {
  using Dtype = TypeParam;
  LSTMLayer<Dtype> layer(LSTMParam(3));
  Blob<Dtype> x({4, 2, 5}), cont({4, 2}), h;
  layer.SetUp({&x, &cont}, {&h});
  EXPECT_EQ(h.shape(), (std::vector<int>{4, 2, 3}));
  ASSERT_EQ(layer.blobs().size(), 3u);
  EXPECT_EQ(layer.blobs()[0]->shape(), (std::vector<int>{12, 5}));  // W_xc
  EXPECT_EQ(layer.blobs()[1]->shape(), (std::vector<int>{12}));     // b_c
  EXPECT_EQ(layer.blobs()[2]->shape(), (std::vector<int>{12, 3}));  // W_hc
  Blob<Dtype> x_static({2, 7});
  LSTMLayer<Dtype> with_static(LSTMParam(3));
  with_static.SetUp({&x, &cont, &x_static}, {&h});
  ASSERT_EQ(with_static.blobs().size(), 4u);
  EXPECT_EQ(with_static.blobs()[2]->shape(), (std::vector<int>{12, 7}));  // W_xc_static
  EXPECT_EQ(with_static.blobs()[3]->shape(), (std::vector<int>{12, 3}));  // W_hc
}

TYPED_TEST(LSTMLayerTest, ForwardMatchesTheStepByStepReference) {
  using Dtype = TypeParam;
  LSTMLayer<Dtype> layer(LSTMParam(3));
  Rng rng(15);
  Blob<Dtype> x({4, 2, 5}), cont({4, 2}), h;
  FillGaussian<Dtype>(&x, rng);
  // Stream 0 starts a new sequence at step 2.
  SetValues(&cont, {0, 0, 1, 1, 0, 1, 1, 1});
  layer.SetUp({&x, &cont}, {&h});
  layer.Forward({&x, &cont}, {&h});
  std::vector<double> expected;
  ReferenceLSTM(layer, x, cont, std::vector<double>(6, 0), std::vector<double>(6, 0), &expected);
  ExpectNear(h.cpu_data(), expected, 0, h.count(), "h");
}

// Without expose_hidden the state at the end of one Forward starts the next: two halves of a
// sequence in turn give what the whole does at once.
TYPED_TEST(LSTMLayerTest, CarriesTheStateAcrossForwards) {
  using Dtype = TypeParam;
  Rng rng(16);
  Blob<Dtype> x({6, 2, 3}), cont({6, 2}), h;
  FillGaussian<Dtype>(&x, rng);
  SetValues(&cont, {0, 0, 1, 1, 1, 1, 1, 0, 1, 1, 1, 1});
  LSTMLayer<Dtype> whole(LSTMParam(2));
  whole.SetUp({&x, &cont}, {&h});
  whole.Forward({&x, &cont}, {&h});

  LSTMLayer<Dtype> halves(LSTMParam(2));
  Blob<Dtype> x_half({3, 2, 3}), cont_half({3, 2}), h_half;
  halves.SetUp({&x_half, &cont_half}, {&h_half});
  for (std::size_t b = 0; b < 3; ++b) halves.blobs()[b]->CopyFrom(*whole.blobs()[b]);
  for (int half = 0; half < 2; ++half) {
    cpu_copy(x_half.count(), x.cpu_data() + half * x_half.count(), x_half.mutable_cpu_data());
    cpu_copy(cont_half.count(), cont.cpu_data() + half * 6, cont_half.mutable_cpu_data());
    halves.Forward({&x_half, &cont_half}, {&h_half});
    for (int i = 0; i < h_half.count(); ++i) {
      EXPECT_NEAR(h_half.cpu_data()[i], h.cpu_data()[half * h_half.count() + i], 1e-5)
          << "half " << half << " element " << i;
    }
  }
}

// With expose_hidden the state comes in as bottoms and goes out as tops.
TYPED_TEST(LSTMLayerTest, ExposedHiddenState) {
  using Dtype = TypeParam;
  LSTMLayer<Dtype> layer(LSTMParam(2, true));
  Rng rng(17);
  Blob<Dtype> x({3, 2, 3}), cont({3, 2}), h0({1, 2, 2}), c0({1, 2, 2}), h, hT, cT;
  FillGaussian<Dtype>(&x, rng);
  FillGaussian<Dtype>(&h0, rng);
  FillGaussian<Dtype>(&c0, rng);
  SetValues(&cont, {1, 0, 1, 1, 1, 1});
  layer.SetUp({&x, &cont, &h0, &c0}, {&h, &hT, &cT});
  layer.Forward({&x, &cont, &h0, &c0}, {&h, &hT, &cT});
  std::vector<double> expected;
  ReferenceLSTM(layer, x, cont, std::vector<double>(h0.cpu_data(), h0.cpu_data() + 4),
                std::vector<double>(c0.cpu_data(), c0.cpu_data() + 4), &expected);
  ExpectNear(h.cpu_data(), expected, 0, 12, "h");
  ExpectNear(hT.cpu_data(), expected, 12, 4, "h_T");
  ExpectNear(cT.cpu_data(), expected, 16, 4, "c_T");
}

TYPED_TEST(LSTMLayerTest, Gradient) {
  using Dtype = TypeParam;
  LSTMLayer<Dtype> layer(LSTMParam(2));
  Rng rng(18);
  Blob<Dtype> x({3, 2, 3}), cont({3, 2}), h;
  FillGaussian<Dtype>(&x, rng);
  SetValues(&cont, {0, 0, 1, 0, 1, 1});
  GradientChecker<Dtype> checker(1e-3, 1e-2);
  checker.CheckGradientExhaustive(&layer, {&x, &cont}, {&h}, 0);
}

TYPED_TEST(LSTMLayerTest, GradientStaticInput) {
  using Dtype = TypeParam;
  LSTMLayer<Dtype> layer(LSTMParam(2));
  Rng rng(19);
  Blob<Dtype> x({3, 2, 3}), cont({3, 2}), x_static({2, 4}), h;
  FillGaussian<Dtype>(&x, rng);
  FillGaussian<Dtype>(&x_static, rng);
  SetValues(&cont, {0, 0, 1, 1, 1, 1});
  GradientChecker<Dtype> checker(1e-3, 1e-2);
  layer.SetUp({&x, &cont, &x_static}, {&h});
  for (int bottom : {0, 2}) {
    checker.CheckGradientSingle(&layer, {&x, &cont, &x_static}, {&h}, bottom, -1, -1, false);
  }
}

TYPED_TEST(LSTMLayerTest, GradientExposedHidden) {
  using Dtype = TypeParam;
  LSTMLayer<Dtype> layer(LSTMParam(2, true));
  Rng rng(20);
  Blob<Dtype> x({3, 2, 3}), cont({3, 2}), h0({1, 2, 2}), c0({1, 2, 2}), h, hT, cT;
  for (Blob<Dtype>* b : {&x, &h0, &c0}) FillGaussian<Dtype>(b, rng);
  SetValues(&cont, {1, 0, 1, 1, 1, 1});
  GradientChecker<Dtype> checker(1e-3, 1e-2);
  layer.SetUp({&x, &cont, &h0, &c0}, {&h, &hT, &cT});
  for (int bottom : {0, 2, 3}) {
    checker.CheckGradientSingle(&layer, {&x, &cont, &h0, &c0}, {&h, &hT, &cT}, bottom, -1, -1,
                                false);
  }
}

// In a net the weights live in the net's arena: every step, including those that share a
// weight with the first, must read the weights the solver updates there and add its gradient
// there. A lone layer with the same weights (whose steps share them as set up) is the
// reference.
TYPED_TEST(LSTMLayerTest, UsesTheNetsWeightsAfterAnUpdate) {
  using Dtype = TypeParam;
  Net<Dtype> net(ParseText<NetParameter>(
      "layer { name: 'in' type: 'Input' top: 'x' top: 'cont' input_param { shape { dim: 3 "
      "dim: 2 dim: 3 } shape { dim: 3 dim: 2 } } } "
      "layer { name: 'lstm' type: 'LSTM' bottom: 'x' bottom: 'cont' top: 'h' recurrent_param { "
      "num_output: 2 weight_filler { type: 'gaussian' std: 0.5 } } } "
      "layer { name: 'loss' type: 'Reduction' bottom: 'h' top: 'loss' loss_weight: 1 "
      "reduction_param { operation: SUMSQ } }"));
  Rng rng(21);
  Blob<Dtype>& x = *net.blob_by_name("x");
  Blob<Dtype>& cont = *net.blob_by_name("cont");
  FillGaussian<Dtype>(&x, rng);
  SetValues(&cont, {0, 0, 1, 1, 1, 1});
  Layer<Dtype>& lstm = *net.layer_by_name("lstm");
  LSTMLayer<Dtype> alone(net.layer_by_name("lstm")->layer_param());
  Blob<Dtype> h;
  alone.SetUp({&x, &cont}, {&h});
  for (int step = 0; step < 2; ++step) {
    SCOPED_TRACE(step);
    net.ClearParamDiffs();
    net.ForwardBackward();
    for (std::size_t b = 0; b < 3; ++b) {
      alone.blobs()[b]->CopyFrom(*lstm.blobs()[b]);
      cpu_set(alone.blobs()[b]->count(), Dtype(0), alone.blobs()[b]->mutable_cpu_diff());
    }
    alone.Forward({&x, &cont}, {&h});
    const Blob<Dtype>& net_h = *net.blob_by_name("h");
    for (int i = 0; i < h.count(); ++i) EXPECT_NEAR(net_h.cpu_data()[i], h.cpu_data()[i], 1e-5);
    h.CopyFrom(net_h, true);
    alone.Backward({&h}, {false, false}, {&x, &cont});
    for (std::size_t b = 0; b < 3; ++b) {
      const Blob<Dtype>& mine = *lstm.blobs()[b];
      const Blob<Dtype>& reference = *alone.blobs()[b];
      for (int i = 0; i < mine.count(); ++i) {
        EXPECT_NEAR(mine.cpu_diff()[i], reference.cpu_diff()[i], 1e-5)
            << "parameter " << b << " element " << i;
      }
    }
    EXPECT_GT(alone.blobs()[2]->asum_diff(), 0);  // W_hc has a gradient to check
    net.Update();
  }
}

TEST(LSTMLayerTest, DebugInfoReachesTheUnrolledNet) {
  for (const bool on : {false, true}) {
    LayerParameter param = LSTMParam(2);
    param.mutable_recurrent_param()->set_debug_info(on);
    LSTMLayer<float> layer(param);
    Blob<float> x({2, 1, 3}), cont({2, 1}), h;
    layer.SetUp({&x, &cont}, {&h});
    EXPECT_EQ(layer.unrolled_net().debug_info(), on);
  }
}

TEST(LSTMLayerErrorTest, BadInputsNameTheLayer) {
  const auto make = [](const std::string& text) {
    return LayerRegistry<float>::CreateLayer(ParseText<LayerParameter>(text));
  };
  const std::string lstm = "name: 'lstm' type: 'LSTM' recurrent_param { num_output: 2 }";
  Blob<float> x({3, 2, 4}), cont({3, 2}), h, bad_cont({3, 1}), hT, cT;
  ExpectError(
      [&] {
        make(lstm)->SetUp({&x, &bad_cont}, {&h});
      },
      {"layer 'lstm' (LSTM)", "continuation markers (bottom 1)", "3 1 (3)"});
  ExpectError(
      [&] {
        make("name: 'lstm' type: 'LSTM'")->SetUp({&x, &cont}, {&h});
      },
      {"layer 'lstm' (LSTM)", "recurrent_param.num_output"});
  Blob<float> h0({1, 3, 2}), c0({1, 2, 2});
  ExpectError(
      [&] {
        make("name: 'lstm' type: 'LSTM' recurrent_param { num_output: 2 expose_hidden: true }")
            ->SetUp({&x, &cont, &h0, &c0}, {&h, &hT, &cT});
      },
      {"layer 'lstm' (LSTM)", "'h_0' (bottom 2)"});
  auto layer = make(lstm);
  layer->SetUp({&x, &cont}, {&h});
  Blob<float> longer({4, 2, 4}), longer_cont({4, 2});
  ExpectError(
      [&] {
        layer->Forward({&longer, &longer_cont}, {&h});
      },
      {"layer 'lstm' (LSTM)", "time steps changed from 3 to 4"});
  layer->Forward({&x, &cont}, {&h});
  ExpectError(
      [&] {
        layer->Backward({&h}, {true, true}, {&x, &cont});
      },
      {"layer 'lstm' (LSTM)", "sequence continuation markers"});
}

}  // namespace doppio
