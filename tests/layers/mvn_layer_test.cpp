#include "doppio/layers/mvn_layer.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "doppio/core/layer_registry.hpp"
#include "gradient_checker.hpp"
#include "neuron_test_helpers.hpp"
#include "test_util.hpp"

namespace doppio {

template <typename Dtype>
class MVNLayerTest : public ::testing::Test {};
TYPED_TEST_SUITE(MVNLayerTest, TestDtypes);

TYPED_TEST(MVNLayerTest, ForwardBackwardHandComputed) {
  using Dtype = TypeParam;
  MVNLayer<Dtype> layer(ParseText<LayerParameter>("name: 'm' type: 'MVN'"));
  // Two channels of one item: rows [1, 3] and [0, 0, ...]: mean 2, deviation 1; the second
  // row is constant, so it becomes 0 (divided by eps alone).
  Blob<Dtype> bottom({1, 2, 1, 2}), top;
  SetValues(&bottom, {1, 3, 5, 5});
  layer.SetUp({&bottom}, {&top});
  layer.Forward({&bottom}, {&top});
  ExpectValues(top, {-1, 1, 0, 0});
  // dx = (dy - m(dy) - y m(y dy)) / 1: dy = (3, 1): m(dy) = 2, m(y dy) = -1, so
  // dx = (3 - 2 - 1, 1 - 2 + 1) = (0, 0): the gradient of a shift and a scale vanishes.
  // dy = (1, 1) on the second row: m(dy) = 1, y = 0: dx = 0 as well.
  SetDiffs(&top, {3, 1, 1, 1});
  layer.Backward({&top}, {true}, {&bottom});
  ExpectValues(bottom, {0, 0, 0, 0}, true);
}

TYPED_TEST(MVNLayerTest, RowsHaveZeroMeanAndUnitVariance) {
  using Dtype = TypeParam;
  for (const bool across : {false, true}) {
    SCOPED_TRACE(across);
    LayerParameter param = ParseText<LayerParameter>("name: 'm' type: 'MVN'");
    param.mutable_mvn_param()->set_across_channels(across);
    MVNLayer<Dtype> layer(param);
    Rng rng(9);
    Blob<Dtype> bottom({2, 3, 4, 5}), top;
    FillUniform<Dtype>(&bottom, rng, Dtype(-3), Dtype(7));
    layer.SetUp({&bottom}, {&top});
    layer.Forward({&bottom}, {&top});
    const int rows = across ? 2 : 6;
    const int dim = top.count() / rows;
    for (int r = 0; r < rows; ++r) {
      double sum = 0, squares = 0;
      for (int k = 0; k < dim; ++k) {
        const double v = top.cpu_data()[r * dim + k];
        sum += v;
        squares += v * v;
      }
      EXPECT_NEAR(sum / dim, 0, 1e-4) << "row " << r;
      EXPECT_NEAR(squares / dim, 1, 1e-4) << "row " << r;
    }
  }
}

TYPED_TEST(MVNLayerTest, MeanOnly) {
  using Dtype = TypeParam;
  MVNLayer<Dtype> layer(ParseText<LayerParameter>(
      "name: 'm' type: 'MVN' mvn_param { normalize_variance: false across_channels: true }"));
  Blob<Dtype> bottom({2, 2, 1, 1}), top;
  SetValues(&bottom, {1, 5, -2, 4});
  layer.SetUp({&bottom}, {&top});
  layer.Forward({&bottom}, {&top});
  ExpectValues(top, {-2, 2, -3, 3});
  SetDiffs(&top, {1, 3, 2, 2});
  layer.Backward({&top}, {true}, {&bottom});
  ExpectValues(bottom, {-1, 1, 0, 0}, true);
}

TYPED_TEST(MVNLayerTest, Gradient) {
  using Dtype = TypeParam;
  for (const char* options :
       {"", "mvn_param { across_channels: true }", "mvn_param { normalize_variance: false }",
        "mvn_param { normalize_variance: false across_channels: true }"}) {
    SCOPED_TRACE(options);
    MVNLayer<Dtype> layer(
        ParseText<LayerParameter>(std::string("name: 'm' type: 'MVN' ") + options));
    Rng rng(10);
    Blob<Dtype> bottom({2, 3, 2, 2}), top;
    FillGaussian<Dtype>(&bottom, rng);
    GradientChecker<Dtype> checker(1e-3, 2e-3);
    checker.CheckGradientExhaustive(&layer, {&bottom}, {&top});
  }
}

TYPED_TEST(MVNLayerTest, InPlace) {
  ExpectInPlaceMatches<TypeParam>(ParseText<LayerParameter>("name: 'm' type: 'MVN'"), {2, 3, 2, 2},
                                  -2, 2);
}

TEST(MVNLayerErrorTest, NegativeEpsNamesTheField) {
  auto layer = LayerRegistry<float>::CreateLayer(
      ParseText<LayerParameter>("name: 'm' type: 'MVN' mvn_param { eps: -1 }"));
  Blob<float> bottom({1, 2, 2}), top;
  ExpectError([&] { layer->SetUp({&bottom}, {&top}); }, {"layer 'm' (MVN)", "mvn_param.eps"});
}

}  // namespace doppio
