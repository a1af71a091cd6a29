#include "doppio/layers/tanh_layer.hpp"

#include <gtest/gtest.h>

#include "gradient_checker.hpp"
#include "neuron_test_helpers.hpp"
#include "test_util.hpp"

namespace doppio {

template <typename Dtype>
class TanHLayerTest : public ::testing::Test {};
TYPED_TEST_SUITE(TanHLayerTest, TestDtypes);

TYPED_TEST(TanHLayerTest, ForwardBackwardHandComputed) {
  using Dtype = TypeParam;
  TanHLayer<Dtype> layer(ParseText<LayerParameter>("name: 't' type: 'TanH'"));
  Blob<Dtype> bottom({4}), top;
  SetValues(&bottom, {0, 1, -1, 50});
  layer.SetUp({&bottom}, {&top});
  layer.Forward({&bottom}, {&top});
  ExpectValues(top, {0, 0.7615942, -0.7615942, 1});
  SetDiffs(&top, {1, 1, 3, 1});
  layer.Backward({&top}, {true}, {&bottom});
  // 1 - tanh^2: 1, 0.4199743, 3 * 0.4199743, 0.
  ExpectValues(bottom, {1, 0.4199743, 1.2599229, 0}, true);
}

TYPED_TEST(TanHLayerTest, Gradient) {
  using Dtype = TypeParam;
  TanHLayer<Dtype> layer(ParseText<LayerParameter>("name: 't' type: 'TanH'"));
  Rng rng(41);
  Blob<Dtype> bottom({2, 3, 4, 5}), top;
  FillGaussian<Dtype>(&bottom, rng);
  GradientChecker<Dtype> checker(1e-2, 1e-3);
  checker.CheckGradientEltwise(&layer, {&bottom}, {&top});
}

TYPED_TEST(TanHLayerTest, InPlace) {
  ExpectInPlaceMatches<TypeParam>(ParseText<LayerParameter>("name: 't' type: 'TanH'"), {2, 3, 4},
                                  -3, 3);
}

}  // namespace doppio
