#include "doppio/layers/relu_layer.hpp"

#include <gtest/gtest.h>

#include "gradient_checker.hpp"
#include "neuron_test_helpers.hpp"
#include "test_util.hpp"

namespace doppio {

template <typename Dtype>
class ReLULayerTest : public ::testing::Test {};
TYPED_TEST_SUITE(ReLULayerTest, TestDtypes);

TYPED_TEST(ReLULayerTest, ForwardBackwardHandComputed) {
  using Dtype = TypeParam;
  ReLULayer<Dtype> layer(ParseText<LayerParameter>("name: 'r' type: 'ReLU'"));
  Blob<Dtype> bottom({1, 5}), top;
  SetValues(&bottom, {-2, -0.5, 0, 0.5, 3});
  layer.SetUp({&bottom}, {&top});
  EXPECT_EQ(top.shape(), bottom.shape());
  layer.Forward({&bottom}, {&top});
  ExpectValues(top, {0, 0, 0, 0.5, 3});
  SetDiffs(&top, {1, 2, 3, 4, 5});
  layer.Backward({&top}, {true}, {&bottom});
  // The subgradient at 0 is the negative side's (0 here).
  ExpectValues(bottom, {0, 0, 0, 4, 5}, true);
}

TYPED_TEST(ReLULayerTest, LeakyHandComputed) {
  using Dtype = TypeParam;
  ReLULayer<Dtype> layer(
      ParseText<LayerParameter>("name: 'r' type: 'ReLU' relu_param { negative_slope: 0.1 }"));
  Blob<Dtype> bottom({2}), top;
  SetValues(&bottom, {-2, 3});
  layer.SetUp({&bottom}, {&top});
  layer.Forward({&bottom}, {&top});
  ExpectValues(top, {-0.2, 3});
  SetDiffs(&top, {10, 10});
  layer.Backward({&top}, {true}, {&bottom});
  ExpectValues(bottom, {1, 10}, true);
}

TYPED_TEST(ReLULayerTest, PropagateDownFalseLeavesBottomDiff) {
  using Dtype = TypeParam;
  ReLULayer<Dtype> layer(ParseText<LayerParameter>("name: 'r' type: 'ReLU'"));
  Blob<Dtype> bottom({3}), top;
  SetValues(&bottom, {-1, 1, 2});
  SetDiffs(&bottom, {7, 7, 7});
  layer.SetUp({&bottom}, {&top});
  layer.Forward({&bottom}, {&top});
  SetDiffs(&top, {1, 1, 1});
  layer.Backward({&top}, {false}, {&bottom});
  ExpectValues(bottom, {7, 7, 7}, true);
}

TYPED_TEST(ReLULayerTest, Gradient) {
  using Dtype = TypeParam;
  ReLULayer<Dtype> layer(ParseText<LayerParameter>("name: 'r' type: 'ReLU'"));
  Rng rng(11);
  Blob<Dtype> bottom({2, 3, 4, 5}), top;
  FillGaussian<Dtype>(&bottom, rng);
  GradientChecker<Dtype> checker(1e-2, 1e-3, 1701, 0, 0.01);
  checker.CheckGradientEltwise(&layer, {&bottom}, {&top});
}

TYPED_TEST(ReLULayerTest, GradientLeaky) {
  using Dtype = TypeParam;
  Rng rng(12);
  const double slope = rng.Uniform(0.01, 0.9);
  LayerParameter param = ParseText<LayerParameter>("name: 'r' type: 'ReLU'");
  param.mutable_relu_param()->set_negative_slope(static_cast<float>(slope));
  ReLULayer<Dtype> layer(param);
  Blob<Dtype> bottom({2, 3, 4, 5}), top;
  FillGaussian<Dtype>(&bottom, rng);
  GradientChecker<Dtype> checker(1e-2, 1e-3, 1701, 0, 0.01);
  checker.CheckGradientEltwise(&layer, {&bottom}, {&top});
}

TYPED_TEST(ReLULayerTest, InPlace) {
  for (const char* slope : {"0", "0.1", "-0.5"}) {
    SCOPED_TRACE(slope);
    ExpectInPlaceMatches<TypeParam>(
        ParseText<LayerParameter>(
            std::string("name: 'r' type: 'ReLU' relu_param { negative_slope: ") + slope + " }"),
        {2, 3, 4}, -1, 1, true);
  }
}

}  // namespace doppio
