#include "doppio/layers/prelu_layer.hpp"

#include <gtest/gtest.h>

#include <string>

#include "gradient_checker.hpp"
#include "neuron_test_helpers.hpp"
#include "test_util.hpp"

namespace doppio {

template <typename Dtype>
class PReLULayerTest : public ::testing::Test {};
TYPED_TEST_SUITE(PReLULayerTest, TestDtypes);

TYPED_TEST(PReLULayerTest, DefaultSlopesAndShapes) {
  using Dtype = TypeParam;
  Blob<Dtype> bottom({2, 3, 4}), top;
  PReLULayer<Dtype> per_channel(ParseText<LayerParameter>("name: 'p' type: 'PReLU'"));
  per_channel.SetUp({&bottom}, {&top});
  ASSERT_EQ(per_channel.blobs().size(), 1u);
  EXPECT_EQ(per_channel.blobs()[0]->shape(), std::vector<int>({3}));
  ExpectValues(*per_channel.blobs()[0], {0.25, 0.25, 0.25});
  EXPECT_EQ(top.shape(), bottom.shape());

  PReLULayer<Dtype> shared(
      ParseText<LayerParameter>("name: 'p' type: 'PReLU' prelu_param { channel_shared: true }"));
  shared.SetUp({&bottom}, {&top});
  ASSERT_EQ(shared.blobs().size(), 1u);
  EXPECT_EQ(shared.blobs()[0]->num_axes(), 0);
  ExpectValues(*shared.blobs()[0], {0.25});

  PReLULayer<Dtype> filled(ParseText<LayerParameter>(
      "name: 'p' type: 'PReLU' prelu_param { filler { type: 'constant' value: -0.5 } }"));
  filled.SetUp({&bottom}, {&top});
  ExpectValues(*filled.blobs()[0], {-0.5, -0.5, -0.5});
}

TYPED_TEST(PReLULayerTest, PerChannelHandComputed) {
  using Dtype = TypeParam;
  PReLULayer<Dtype> layer(ParseText<LayerParameter>("name: 'p' type: 'PReLU'"));
  Blob<Dtype> bottom({2, 2, 2}), top;
  // n0: c0 = [-1, 2], c1 = [-4, 3]; n1: c0 = [0, -2], c1 = [1, -1].
  SetValues(&bottom, {-1, 2, -4, 3, 0, -2, 1, -1});
  layer.SetUp({&bottom}, {&top});
  SetValues(layer.blobs()[0].get(), {0.1, 0.5});
  layer.Forward({&bottom}, {&top});
  ExpectValues(top, {-0.1, 2, -2, 3, 0, -0.2, 1, -0.5});
  SetDiffs(&top, {1, 1, 1, 1, 1, 2, 3, 1});
  cpu_set(2, Dtype(0), layer.blobs()[0]->mutable_cpu_diff());
  layer.Backward({&top}, {true}, {&bottom});
  ExpectValues(bottom, {0.1, 1, 0.5, 1, 0.1, 0.2, 3, 0.5}, true);
  // Slope gradient: sum over x <= 0 of x * dy: c0 = -1 + 0 + (-2 * 2) = -5, c1 = -4 - 1 = -5.
  ExpectValues(*layer.blobs()[0], {-5, -5}, true);
  // Parameter gradients accumulate.
  layer.Backward({&top}, {false}, {&bottom});
  ExpectValues(*layer.blobs()[0], {-10, -10}, true);
}

TYPED_TEST(PReLULayerTest, SharedHandComputed) {
  using Dtype = TypeParam;
  PReLULayer<Dtype> layer(
      ParseText<LayerParameter>("name: 'p' type: 'PReLU' prelu_param { channel_shared: true }"));
  Blob<Dtype> bottom({1, 2, 2}), top;
  SetValues(&bottom, {-1, 2, -4, 3});
  layer.SetUp({&bottom}, {&top});
  layer.Forward({&bottom}, {&top});
  ExpectValues(top, {-0.25, 2, -1, 3});
  SetDiffs(&top, {1, 1, 2, 1});
  cpu_set(1, Dtype(0), layer.blobs()[0]->mutable_cpu_diff());
  layer.Backward({&top}, {true}, {&bottom});
  ExpectValues(bottom, {0.25, 1, 0.5, 1}, true);
  ExpectValues(*layer.blobs()[0], {-9}, true);  // -1 * 1 + -4 * 2
}

TYPED_TEST(PReLULayerTest, FrozenSlopesGetNoGradient) {
  using Dtype = TypeParam;
  PReLULayer<Dtype> layer(ParseText<LayerParameter>("name: 'p' type: 'PReLU'"));
  Blob<Dtype> bottom({1, 2, 1}), top;
  SetValues(&bottom, {-1, -2});
  layer.SetUp({&bottom}, {&top});
  layer.set_param_propagate_down(0, false);
  cpu_set(2, Dtype(0), layer.blobs()[0]->mutable_cpu_diff());
  layer.Forward({&bottom}, {&top});
  SetDiffs(&top, {1, 1});
  layer.Backward({&top}, {true}, {&bottom});
  ExpectValues(*layer.blobs()[0], {0, 0}, true);
  ExpectValues(bottom, {0.25, 0.25}, true);
}

TYPED_TEST(PReLULayerTest, GradientPerChannel) {
  using Dtype = TypeParam;
  PReLULayer<Dtype> layer(ParseText<LayerParameter>(
      "name: 'p' type: 'PReLU' prelu_param { filler { type: 'uniform' min: -0.5 max: 0.9 } }"));
  Rng rng(101);
  Blob<Dtype> bottom({2, 3, 2, 2}), top;
  FillGaussian<Dtype>(&bottom, rng);
  GradientChecker<Dtype> checker(1e-2, 1e-3, 1701, 0, 0.01);
  checker.CheckGradientExhaustive(&layer, {&bottom}, {&top});
}

TYPED_TEST(PReLULayerTest, GradientShared) {
  using Dtype = TypeParam;
  PReLULayer<Dtype> layer(ParseText<LayerParameter>(
      "name: 'p' type: 'PReLU' prelu_param { channel_shared: true filler { type: 'uniform' min: "
      "-0.5 max: 0.9 } }"));
  Rng rng(102);
  Blob<Dtype> bottom({2, 3, 2, 2}), top;
  FillGaussian<Dtype>(&bottom, rng);
  GradientChecker<Dtype> checker(1e-2, 1e-3, 1701, 0, 0.01);
  checker.CheckGradientExhaustive(&layer, {&bottom}, {&top});
}

TYPED_TEST(PReLULayerTest, GradientTwoAxes) {
  using Dtype = TypeParam;
  PReLULayer<Dtype> layer(ParseText<LayerParameter>(
      "name: 'p' type: 'PReLU' prelu_param { filler { type: 'gaussian' std: 0.5 } }"));
  Rng rng(103);
  Blob<Dtype> bottom({3, 4}), top;
  FillGaussian<Dtype>(&bottom, rng);
  GradientChecker<Dtype> checker(1e-2, 1e-3, 1701, 0, 0.01);
  checker.CheckGradientExhaustive(&layer, {&bottom}, {&top});
}

TYPED_TEST(PReLULayerTest, InPlace) {
  ExpectInPlaceMatches<TypeParam>(
      ParseText<LayerParameter>(
          "name: 'p' type: 'PReLU' prelu_param { filler { type: 'uniform' min: -1 max: 1 } }"),
      {2, 3, 2, 2}, -1, 1, true);
  ExpectInPlaceMatches<TypeParam>(
      ParseText<LayerParameter>("name: 'p' type: 'PReLU' prelu_param { channel_shared: true "
                                "filler { type: 'constant' value: 0 } }"),
      {2, 3, 4}, -1, 1, true);
}

TYPED_TEST(PReLULayerTest, BadInputsNameTheLayer) {
  using Dtype = TypeParam;
  {
    PReLULayer<Dtype> layer(ParseText<LayerParameter>("name: 'p' type: 'PReLU'"));
    Blob<Dtype> bottom({5}), top;
    EXPECT_CONTAINS(ErrorMessageOf([&] { layer.SetUp({&bottom}, {&top}); }), "layer 'p' (PReLU)");
  }
  {
    // Slopes loaded from weights must match the channel count.
    LayerParameter param = ParseText<LayerParameter>(
        "name: 'p' type: 'PReLU' blobs { shape { dim: 4 } data: [1, 2, 3, 4] }");
    PReLULayer<Dtype> layer(param);
    Blob<Dtype> bottom({2, 3}), top;
    EXPECT_CONTAINS(ErrorMessageOf([&] { layer.SetUp({&bottom}, {&top}); }), "layer 'p' (PReLU)");
  }
  {
    PReLULayer<Dtype> layer(ParseText<LayerParameter>(
        "name: 'p' type: 'PReLU' prelu_param { filler { type: 'nonsense' } }"));
    Blob<Dtype> bottom({2, 3}), top;
    const std::string message = ErrorMessageOf([&] { layer.SetUp({&bottom}, {&top}); });
    EXPECT_CONTAINS(message, "layer 'p' (PReLU)");
    EXPECT_CONTAINS(message, "prelu_param.filler");
  }
  {
    // A per-channel layer cannot later take another channel count.
    PReLULayer<Dtype> layer(ParseText<LayerParameter>("name: 'p' type: 'PReLU'"));
    Blob<Dtype> bottom({2, 3}), top;
    layer.SetUp({&bottom}, {&top});
    bottom.Reshape({2, 4});
    EXPECT_CONTAINS(ErrorMessageOf([&] { layer.Forward({&bottom}, {&top}); }), "layer 'p' (PReLU)");
  }
}

TYPED_TEST(PReLULayerTest, LoadsGivenSlopes) {
  using Dtype = TypeParam;
  PReLULayer<Dtype> layer(ParseText<LayerParameter>(
      "name: 'p' type: 'PReLU' blobs { shape { dim: 2 } data: [0.5, 2] }"));
  Blob<Dtype> bottom({1, 2, 1}), top;
  SetValues(&bottom, {-2, -2});
  layer.SetUp({&bottom}, {&top});
  layer.Forward({&bottom}, {&top});
  ExpectValues(top, {-1, -4});
}

}  // namespace doppio
