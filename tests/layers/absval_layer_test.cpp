#include "doppio/layers/absval_layer.hpp"

#include <gtest/gtest.h>

#include "gradient_checker.hpp"
#include "neuron_test_helpers.hpp"
#include "test_util.hpp"

namespace doppio {

template <typename Dtype>
class AbsValLayerTest : public ::testing::Test {};
TYPED_TEST_SUITE(AbsValLayerTest, TestDtypes);

TYPED_TEST(AbsValLayerTest, ForwardBackwardHandComputed) {
  using Dtype = TypeParam;
  AbsValLayer<Dtype> layer(ParseText<LayerParameter>("name: 'a' type: 'AbsVal'"));
  Blob<Dtype> bottom({1, 4}), top;
  SetValues(&bottom, {-2, 0, 3, -0.5});
  layer.SetUp({&bottom}, {&top});
  layer.Forward({&bottom}, {&top});
  ExpectValues(top, {2, 0, 3, 0.5});
  SetDiffs(&top, {1, 1, 1, 4});
  layer.Backward({&top}, {true}, {&bottom});
  ExpectValues(bottom, {-1, 0, 1, -4}, true);
}

TYPED_TEST(AbsValLayerTest, Gradient) {
  using Dtype = TypeParam;
  AbsValLayer<Dtype> layer(ParseText<LayerParameter>("name: 'a' type: 'AbsVal'"));
  Rng rng(51);
  Blob<Dtype> bottom({2, 3, 4, 5}), top;
  FillGaussian<Dtype>(&bottom, rng);
  GradientChecker<Dtype> checker(1e-2, 1e-3, 1701, 0, 0.01);
  checker.CheckGradientEltwise(&layer, {&bottom}, {&top});
}

TYPED_TEST(AbsValLayerTest, InPlace) {
  ExpectInPlaceMatches<TypeParam>(ParseText<LayerParameter>("name: 'a' type: 'AbsVal'"), {2, 3, 4},
                                  -2, 2, true);
}

}  // namespace doppio
