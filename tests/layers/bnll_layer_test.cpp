#include "doppio/layers/bnll_layer.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "gradient_checker.hpp"
#include "neuron_test_helpers.hpp"
#include "test_util.hpp"

namespace doppio {

template <typename Dtype>
class BNLLLayerTest : public ::testing::Test {};
TYPED_TEST_SUITE(BNLLLayerTest, TestDtypes);

TYPED_TEST(BNLLLayerTest, ForwardBackwardHandComputed) {
  using Dtype = TypeParam;
  BNLLLayer<Dtype> layer(ParseText<LayerParameter>("name: 'b' type: 'BNLL'"));
  Blob<Dtype> bottom({4}), top;
  SetValues(&bottom, {0, 1, -1, 2});
  layer.SetUp({&bottom}, {&top});
  layer.Forward({&bottom}, {&top});
  // log 2, log(1 + e), log(1 + 1/e), log(1 + e^2).
  ExpectValues(top, {0.6931472, 1.3132617, 0.3132617, 2.1269280});
  SetDiffs(&top, {1, 1, 1, 2});
  layer.Backward({&top}, {true}, {&bottom});
  // sigmoid: 0.5, 0.7310586, 0.2689414, 2 * 0.8807971.
  ExpectValues(bottom, {0.5, 0.7310586, 0.2689414, 1.7615942}, true);
}

TYPED_TEST(BNLLLayerTest, ExtremeInputsStayFinite) {
  using Dtype = TypeParam;
  BNLLLayer<Dtype> layer(ParseText<LayerParameter>("name: 'b' type: 'BNLL'"));
  Blob<Dtype> bottom({4}), top;
  SetValues(&bottom, {100, -100, 1000, -1000});
  layer.SetUp({&bottom}, {&top});
  layer.Forward({&bottom}, {&top});
  const Dtype* y = top.cpu_data();
  EXPECT_NEAR(y[0], 100, 1e-4);
  EXPECT_NEAR(y[1], 0, 1e-30);
  EXPECT_GE(y[1], 0);
  EXPECT_NEAR(y[2], 1000, 1e-3);
  EXPECT_EQ(y[3], 0);
  SetDiffs(&top, {1, 1, 1, 1});
  layer.Backward({&top}, {true}, {&bottom});
  ExpectValues(bottom, {1, 0, 1, 0}, true);
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(std::isfinite(bottom.cpu_diff()[i]));
}

TYPED_TEST(BNLLLayerTest, Gradient) {
  using Dtype = TypeParam;
  BNLLLayer<Dtype> layer(ParseText<LayerParameter>("name: 'b' type: 'BNLL'"));
  Rng rng(61);
  Blob<Dtype> bottom({2, 3, 4, 5}), top;
  FillGaussian<Dtype>(&bottom, rng, Dtype(0), Dtype(2));
  GradientChecker<Dtype> checker(1e-2, 1e-3);
  checker.CheckGradientEltwise(&layer, {&bottom}, {&top});
}

TYPED_TEST(BNLLLayerTest, InPlace) {
  ExpectInPlaceMatches<TypeParam>(ParseText<LayerParameter>("name: 'b' type: 'BNLL'"), {2, 3, 4},
                                  -5, 5);
}

}  // namespace doppio
