#include "doppio/layers/sigmoid_layer.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "gradient_checker.hpp"
#include "neuron_test_helpers.hpp"
#include "test_util.hpp"

namespace doppio {

template <typename Dtype>
class SigmoidLayerTest : public ::testing::Test {};
TYPED_TEST_SUITE(SigmoidLayerTest, TestDtypes);

TYPED_TEST(SigmoidLayerTest, ForwardBackwardHandComputed) {
  using Dtype = TypeParam;
  SigmoidLayer<Dtype> layer(ParseText<LayerParameter>("name: 's' type: 'Sigmoid'"));
  Blob<Dtype> bottom({5}), top;
  SetValues(&bottom, {0, 2, -2, -1000, 1000});
  layer.SetUp({&bottom}, {&top});
  layer.Forward({&bottom}, {&top});
  ExpectValues(top, {0.5, 0.8807971, 0.1192029, 0, 1});
  SetDiffs(&top, {1, 1, 2, 1, 1});
  layer.Backward({&top}, {true}, {&bottom});
  // s (1 - s): 0.25, 0.1049936, 2 * 0.1049936; saturated ends give 0, not NaN.
  ExpectValues(bottom, {0.25, 0.1049936, 0.2099872, 0, 0}, true);
}

TYPED_TEST(SigmoidLayerTest, Gradient) {
  using Dtype = TypeParam;
  SigmoidLayer<Dtype> layer(ParseText<LayerParameter>("name: 's' type: 'Sigmoid'"));
  Rng rng(31);
  Blob<Dtype> bottom({2, 3, 4, 5}), top;
  FillGaussian<Dtype>(&bottom, rng, Dtype(0), Dtype(2));
  GradientChecker<Dtype> checker(1e-2, 1e-3);
  checker.CheckGradientEltwise(&layer, {&bottom}, {&top});
}

TYPED_TEST(SigmoidLayerTest, InPlace) {
  ExpectInPlaceMatches<TypeParam>(ParseText<LayerParameter>("name: 's' type: 'Sigmoid'"), {2, 3, 4},
                                  -4, 4);
}

}  // namespace doppio
