#include "doppio/layers/threshold_layer.hpp"

#include <gtest/gtest.h>

#include "neuron_test_helpers.hpp"
#include "test_util.hpp"

namespace doppio {

template <typename Dtype>
class ThresholdLayerTest : public ::testing::Test {};
TYPED_TEST_SUITE(ThresholdLayerTest, TestDtypes);

TYPED_TEST(ThresholdLayerTest, ForwardHandComputed) {
  using Dtype = TypeParam;
  ThresholdLayer<Dtype> layer(
      ParseText<LayerParameter>("name: 'th' type: 'Threshold' threshold_param { threshold: 0.5 }"));
  Blob<Dtype> bottom({5}), top;
  SetValues(&bottom, {0.4, 0.5, 0.6, -1, 7});
  layer.SetUp({&bottom}, {&top});
  layer.Forward({&bottom}, {&top});
  // Strictly greater than the threshold.
  ExpectValues(top, {0, 0, 1, 0, 1});
}

TYPED_TEST(ThresholdLayerTest, DefaultThresholdIsZero) {
  using Dtype = TypeParam;
  ThresholdLayer<Dtype> layer(ParseText<LayerParameter>("name: 'th' type: 'Threshold'"));
  Blob<Dtype> bottom({3}), top;
  SetValues(&bottom, {-0.1, 0, 0.1});
  layer.SetUp({&bottom}, {&top});
  layer.Forward({&bottom}, {&top});
  ExpectValues(top, {0, 0, 1});
}

TYPED_TEST(ThresholdLayerTest, InPlaceForward) {
  using Dtype = TypeParam;
  ThresholdLayer<Dtype> layer(
      ParseText<LayerParameter>("name: 'th' type: 'Threshold' threshold_param { threshold: -1 }"));
  Blob<Dtype> blob({2, 2});
  SetValues(&blob, {-2, -1, -0.5, 3});
  layer.SetUp({&blob}, {&blob});
  layer.Forward({&blob}, {&blob});
  ExpectValues(blob, {0, 0, 1, 1});
}

TYPED_TEST(ThresholdLayerTest, BackwardRefusesToPropagate) {
  using Dtype = TypeParam;
  ThresholdLayer<Dtype> layer(ParseText<LayerParameter>("name: 'th' type: 'Threshold'"));
  Blob<Dtype> bottom({3}), top;
  SetValues(&bottom, {-1, 0, 1});
  SetDiffs(&bottom, {5, 5, 5});
  layer.SetUp({&bottom}, {&top});
  layer.Forward({&bottom}, {&top});
  EXPECT_FALSE(layer.AllowForceBackward(0));
  // Not asked to propagate: nothing happens.
  layer.Backward({&top}, {false}, {&bottom});
  ExpectValues(bottom, {5, 5, 5}, true);
  const std::string message = ErrorMessageOf([&] { layer.Backward({&top}, {true}, {&bottom}); });
  EXPECT_CONTAINS(message, "layer 'th' (Threshold)");
}

}  // namespace doppio
