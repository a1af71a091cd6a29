#include "doppio/layers/clip_layer.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "gradient_checker.hpp"
#include "neuron_test_helpers.hpp"
#include "test_util.hpp"

namespace doppio {

template <typename Dtype>
class ClipLayerTest : public ::testing::Test {};
TYPED_TEST_SUITE(ClipLayerTest, TestDtypes);

TYPED_TEST(ClipLayerTest, ForwardBackwardHandComputed) {
  using Dtype = TypeParam;
  ClipLayer<Dtype> layer(
      ParseText<LayerParameter>("name: 'c' type: 'Clip' clip_param { min: -1 max: 2 }"));
  Blob<Dtype> bottom({6}), top;
  SetValues(&bottom, {-3, -1, 0.5, 2, 2.5, 1.5});
  layer.SetUp({&bottom}, {&top});
  layer.Forward({&bottom}, {&top});
  ExpectValues(top, {-1, -1, 0.5, 2, 2, 1.5});
  SetDiffs(&top, {1, 2, 3, 4, 5, 6});
  layer.Backward({&top}, {true}, {&bottom});
  // The bounds themselves pass the gradient.
  ExpectValues(bottom, {0, 2, 3, 4, 0, 6}, true);
}

TYPED_TEST(ClipLayerTest, Gradient) {
  using Dtype = TypeParam;
  ClipLayer<Dtype> layer(
      ParseText<LayerParameter>("name: 'c' type: 'Clip' clip_param { min: -0.5 max: 0.8 }"));
  Rng rng(3);
  Blob<Dtype> bottom({2, 3, 4}), top;
  FillGaussian<Dtype>(&bottom, rng);
  // Skip the two kinks: points within a step of -0.5 and 0.8.
  for (int i = 0; i < bottom.count(); ++i) {
    Dtype& x = bottom.mutable_cpu_data()[i];
    if (std::fabs(x + Dtype(0.5)) < 0.02 || std::fabs(x - Dtype(0.8)) < 0.02) x = 0;
  }
  GradientChecker<Dtype> checker(1e-3, 1e-3);
  checker.CheckGradientEltwise(&layer, {&bottom}, {&top});
}

TYPED_TEST(ClipLayerTest, InPlace) {
  ExpectInPlaceMatches<TypeParam>(
      ParseText<LayerParameter>("name: 'c' type: 'Clip' clip_param { min: -0.5 max: 0.5 }"),
      {2, 3, 4}, -2, 2);
}

TEST(ClipLayerErrorTest, BadParameters) {
  Blob<float> bottom({3}), top;
  const auto setup = [&](const std::string& text) {
    auto layer = LayerRegistry<float>::CreateLayer(ParseText<LayerParameter>(text));
    layer->SetUp({&bottom}, {&top});
  };
  ExpectError([&] { setup("name: 'c' type: 'Clip' clip_param { max: 1 }"); },
              {"layer 'c' (Clip)", "clip_param", "min"});
  ExpectError([&] { setup("name: 'c' type: 'Clip'"); }, {"layer 'c' (Clip)", "clip_param"});
  ExpectError([&] { setup("name: 'c' type: 'Clip' clip_param { min: 2 max: 1 }"); },
              {"layer 'c' (Clip)", "clip_param.min (2)", "clip_param.max (1)"});
}

}  // namespace doppio
