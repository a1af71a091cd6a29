#include "doppio/layers/lstm_unit_layer.hpp"

#include <gtest/gtest.h>

#include "doppio/core/layer_registry.hpp"
#include "gradient_checker.hpp"
#include "test_util.hpp"

namespace doppio {

template <typename Dtype>
class LSTMUnitLayerTest : public ::testing::Test {
 protected:
  LayerParameter param_ = ParseText<LayerParameter>("name: 'u' type: 'LSTMUnit'");
};
TYPED_TEST_SUITE(LSTMUnitLayerTest, TestDtypes);

TYPED_TEST(LSTMUnitLayerTest, ForwardHandComputed) {
  using Dtype = TypeParam;
  LSTMUnitLayer<Dtype> layer(this->param_);
  // Two items of one cell: the first continues its sequence, the second starts one.
  Blob<Dtype> c_prev({1, 2, 1}), gates({1, 2, 4}), cont({1, 2}), c, h;
  SetValues(&c_prev, {2, 2});
  // Gate pre-activations i', f', o', g': sigmoid(0) = 0.5, tanh(0.5) = 0.4621172.
  SetValues(&gates, {0, 0, 0, 0.5, 0, 0, 0, 0.5});
  SetValues(&cont, {1, 0});
  layer.SetUp({&c_prev, &gates, &cont}, {&c, &h});
  EXPECT_EQ(c.shape(), (std::vector<int>{1, 2, 1}));
  layer.Forward({&c_prev, &gates, &cont}, {&c, &h});
  // c = 0.5 * 2 + 0.5 * 0.4621172 = 1.2310586 (the forget gate is 0 without continuation:
  // c = 0.2310586); h = 0.5 * tanh(c).
  ExpectValues(c, {1.2310586, 0.2310586});
  ExpectValues(h, {0.4214431, 0.1135163});
}

TYPED_TEST(LSTMUnitLayerTest, Gradient) {
  using Dtype = TypeParam;
  LSTMUnitLayer<Dtype> layer(this->param_);
  Rng rng(14);
  Blob<Dtype> c_prev({1, 3, 2}), gates({1, 3, 8}), cont({1, 3}), c, h;
  FillGaussian<Dtype>(&c_prev, rng);
  FillGaussian<Dtype>(&gates, rng);
  SetValues(&cont, {1, 0, 1});
  GradientChecker<Dtype> checker(1e-3, 1e-3);
  checker.CheckGradientExhaustive(&layer, {&c_prev, &gates, &cont}, {&c, &h}, 0);
  checker.CheckGradientExhaustive(&layer, {&c_prev, &gates, &cont}, {&c, &h}, 1);
}

TEST(LSTMUnitLayerErrorTest, BadShapesAndContGradientNameTheLayer) {
  const auto make = [] {
    return LayerRegistry<float>::CreateLayer(
        ParseText<LayerParameter>("name: 'u' type: 'LSTMUnit'"));
  };
  Blob<float> c_prev({1, 2, 3}), gates({1, 2, 12}), cont({1, 2}), c, h;
  Blob<float> few_gates({1, 2, 9}), wrong_cont({2, 1}), two_steps({2, 2, 3});
  ExpectError(
      [&] {
        make()->SetUp({&c_prev, &few_gates, &cont}, {&c, &h});
      },
      {"layer 'u' (LSTMUnit)", "4 x 3"});
  ExpectError(
      [&] {
        make()->SetUp({&c_prev, &gates, &wrong_cont}, {&c, &h});
      },
      {"layer 'u' (LSTMUnit)", "continuation markers (bottom 2)"});
  ExpectError(
      [&] {
        make()->SetUp({&two_steps, &gates, &cont}, {&c, &h});
      },
      {"layer 'u' (LSTMUnit)", "previous cell state (bottom 0)"});
  auto layer = make();
  layer->SetUp({&c_prev, &gates, &cont}, {&c, &h});
  layer->Forward({&c_prev, &gates, &cont}, {&c, &h});
  ExpectError(
      [&] {
        layer->Backward({&c, &h}, {true, true, true}, {&c_prev, &gates, &cont});
      },
      {"layer 'u' (LSTMUnit)", "continuation markers"});
}

}  // namespace doppio
