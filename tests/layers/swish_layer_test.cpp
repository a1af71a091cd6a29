#include "doppio/layers/swish_layer.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "gradient_checker.hpp"
#include "neuron_test_helpers.hpp"
#include "test_util.hpp"

namespace doppio {

template <typename Dtype>
class SwishLayerTest : public ::testing::Test {};
TYPED_TEST_SUITE(SwishLayerTest, TestDtypes);

TYPED_TEST(SwishLayerTest, ForwardBackwardHandComputed) {
  using Dtype = TypeParam;
  SwishLayer<Dtype> layer(
      ParseText<LayerParameter>("name: 's' type: 'Swish' swish_param { beta: 2 }"));
  Blob<Dtype> bottom({3}), top;
  SetValues(&bottom, {-1, 0, 0.5});
  layer.SetUp({&bottom}, {&top});
  layer.Forward({&bottom}, {&top});
  // x / (1 + e^(-2x)): -1 / (1 + e^2) = -0.1192029, 0, 0.5 / (1 + e^-1) = 0.3655293.
  ExpectValues(top, {-0.1192029, 0, 0.3655293});
  SetDiffs(&top, {1, 1, 2});
  layer.Backward({&top}, {true}, {&bottom});
  // s + 2 x s (1 - s) with s = sigmoid(2x): at -1, 0.1192029 - 0.2099871 = -0.0907842; at 0,
  // 0.5; at 0.5, 2 * (0.7310586 + 0.1966119) = 1.8553410.
  ExpectValues(bottom, {-0.0907842, 0.5, 1.8553410}, true);
}

TYPED_TEST(SwishLayerTest, DefaultBetaIsOne) {
  using Dtype = TypeParam;
  SwishLayer<Dtype> layer(ParseText<LayerParameter>("name: 's' type: 'Swish'"));
  Blob<Dtype> bottom({1}), top;
  SetValues(&bottom, {2});
  layer.SetUp({&bottom}, {&top});
  layer.Forward({&bottom}, {&top});
  ExpectValues(top, {1.7615942});  // 2 / (1 + e^-2)
}

TYPED_TEST(SwishLayerTest, Gradient) {
  using Dtype = TypeParam;
  SwishLayer<Dtype> layer(
      ParseText<LayerParameter>("name: 's' type: 'Swish' swish_param { beta: 1.5 }"));
  Rng rng(4);
  Blob<Dtype> bottom({2, 3, 4}), top;
  FillGaussian<Dtype>(&bottom, rng);
  GradientChecker<Dtype> checker(1e-3, 1e-3);
  checker.CheckGradientEltwise(&layer, {&bottom}, {&top});
}

TYPED_TEST(SwishLayerTest, InPlace) {
  ExpectInPlaceMatches<TypeParam>(
      ParseText<LayerParameter>("name: 's' type: 'Swish' swish_param { beta: 0.7 }"), {2, 3, 4}, -3,
      3);
}

}  // namespace doppio
