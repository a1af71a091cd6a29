#include "doppio/layers/reshape_layer.hpp"

#include <gtest/gtest.h>

#include "doppio/core/layer_registry.hpp"
#include "gradient_checker.hpp"
#include "test_util.hpp"

namespace doppio {

template <typename Dtype>
class ReshapeLayerTest : public ::testing::Test {
 protected:
  static LayerParameter Param(const std::string& reshape_param) {
    return ParseText<LayerParameter>("name: 'rs' type: 'Reshape' reshape_param { " + reshape_param +
                                     " }");
  }
  static std::vector<int> TopShape(const std::string& reshape_param,
                                   const std::vector<int>& shape) {
    Blob<Dtype> bottom(shape), top;
    ReshapeLayer<Dtype> layer(Param(reshape_param));
    layer.SetUp({&bottom}, {&top});
    return top.shape();
  }
  Rng rng_{4242};
};
TYPED_TEST_SUITE(ReshapeLayerTest, TestDtypes);

using V = std::vector<int>;

// A 2 x 8 bottom becomes 2 x 2 x 4 in each of the ways Caffe's schema documents.
TYPED_TEST(ReshapeLayerTest, DocumentedEquivalentShapes) {
  const V bottom{2, 8};
  EXPECT_EQ(this->TopShape("shape { dim: 2 dim: 2 dim: 4 }", bottom), V({2, 2, 4}));
  EXPECT_EQ(this->TopShape("shape { dim: 0 dim: 2 dim: 4 }", bottom), V({2, 2, 4}));
  EXPECT_EQ(this->TopShape("shape { dim: 0 dim: 2 dim: -1 }", bottom), V({2, 2, 4}));
  EXPECT_EQ(this->TopShape("shape { dim: 0 dim: -1 dim: 4 }", bottom), V({2, 2, 4}));
  EXPECT_EQ(this->TopShape("shape { dim: 2 dim: 4 } axis: 1", bottom), V({2, 2, 4}));
  // A negative axis counts from the end with -1 the position after the last axis, so -2
  // replaces the last axis only.
  EXPECT_EQ(this->TopShape("shape { dim: 2 dim: 4 } axis: -2", bottom), V({2, 2, 4}));
}

TYPED_TEST(ReshapeLayerTest, NumAxesLimitsTheReplacedRange) {
  const V bottom{2, 8};
  EXPECT_EQ(this->TopShape("shape { dim: 1 dim: 2 dim: 8 }", bottom), V({1, 2, 8}));
  EXPECT_EQ(this->TopShape("shape { dim: 1 dim: 2 } num_axes: 1", bottom), V({1, 2, 8}));
  EXPECT_EQ(this->TopShape("shape { dim: 1 } num_axes: 0", bottom), V({1, 2, 8}));
  EXPECT_EQ(this->TopShape("shape { dim: 2 dim: 1 dim: 8 }", bottom), V({2, 1, 8}));
  EXPECT_EQ(this->TopShape("shape { dim: 1 } axis: 1 num_axes: 0", bottom), V({2, 1, 8}));
  EXPECT_EQ(this->TopShape("shape { dim: 1 } axis: -1 num_axes: 0", bottom), V({2, 8, 1}));
  EXPECT_EQ(this->TopShape("shape { dim: 1 dim: 1 } axis: 2 num_axes: 0", V({2, 3, 6, 5})),
            V({2, 3, 1, 1, 6, 5}));
  EXPECT_EQ(this->TopShape("num_axes: 0", V({2, 3})), V({2, 3}));
}

TYPED_TEST(ReshapeLayerTest, CopiesAndInfersDimensions) {
  const V bottom{2, 3, 6, 5};
  EXPECT_EQ(this->TopShape("shape { dim: 0 dim: 0 dim: 0 dim: 0 }", bottom), bottom);
  EXPECT_EQ(this->TopShape("shape { dim: 0 dim: 3 dim: 10 dim: -1 }", bottom), V({2, 3, 10, 3}));
  EXPECT_EQ(this->TopShape("shape { dim: 3 dim: 10 dim: -1 } axis: 1", bottom), V({2, 3, 10, 3}));
  EXPECT_EQ(this->TopShape("shape { dim: -1 } axis: 1 num_axes: 2", bottom), V({2, 18, 5}));
  EXPECT_EQ(this->TopShape("shape { dim: -1 }", bottom), V({180}));
  EXPECT_EQ(this->TopShape("shape { dim: 0 dim: -1 } axis: 1 num_axes: 2", bottom),
            V({2, 3, 6, 5}));
  EXPECT_EQ(this->TopShape("shape { dim: 6 dim: 0 dim: -1 }", bottom), V({6, 3, 10}));
}

TYPED_TEST(ReshapeLayerTest, TopSharesDataAndDiff) {
  Blob<TypeParam> bottom({2, 3}), top;
  SetValues(&bottom, {1, 2, 3, 4, 5, 6});
  ReshapeLayer<TypeParam> layer(this->Param("shape { dim: 3 dim: -1 }"));
  layer.SetUp({&bottom}, {&top});
  layer.Forward({&bottom}, {&top});
  EXPECT_EQ(top.shape(), V({3, 2}));
  EXPECT_EQ(top.cpu_data(), bottom.cpu_data());
  EXPECT_EQ(top.data_at(2, 1, 0, 0), 6);
  SetDiffs(&top, {6, 5, 4, 3, 2, 1});
  layer.Backward({&top}, {true}, {&bottom});
  ExpectDiffs(bottom, {6, 5, 4, 3, 2, 1});
  // A new bottom shape is followed on the next Forward.
  bottom.Reshape({4, 3});
  layer.Forward({&bottom}, {&top});
  EXPECT_EQ(top.shape(), V({3, 4}));
  EXPECT_EQ(top.cpu_data(), bottom.cpu_data());
}

TYPED_TEST(ReshapeLayerTest, Gradient) {
  Blob<TypeParam> bottom({2, 3, 2}), top;
  FillGaussian(&bottom, this->rng_);
  ReshapeLayer<TypeParam> layer(this->Param("shape { dim: 0 dim: -1 dim: 3 }"));
  GradientChecker<TypeParam> checker(1e-2, 1e-3);
  checker.CheckGradientExhaustive(&layer, {&bottom}, {&top});
  EXPECT_EQ(top.shape(), V({2, 2, 3}));
}

TYPED_TEST(ReshapeLayerTest, CountMismatchNamesLayerAndShapes) {
  Blob<TypeParam> bottom({2, 8}), top;
  ReshapeLayer<TypeParam> layer(this->Param("shape { dim: 3 dim: 5 }"));
  EXPECT_THROW(layer.SetUp({&bottom}, {&top}), Error);
  ExpectError([&] { layer.SetUp({&bottom}, {&top}); },
              {"layer 'rs' (Reshape)", "2 8 (16)", "3 5 (15)"});
  ReshapeLayer<TypeParam> indivisible(this->Param("shape { dim: -1 dim: 3 }"));
  ExpectError([&] { indivisible.SetUp({&bottom}, {&top}); },
              {"layer 'rs' (Reshape)", "2 8 (16)", "{-1, 3}"});
}

TYPED_TEST(ReshapeLayerTest, RejectsBadShapes) {
  Blob<TypeParam> bottom({2, 8}), top;
  ReshapeLayer<TypeParam> two_inferred(this->Param("shape { dim: -1 dim: -1 }"));
  EXPECT_THROW(two_inferred.SetUp({&bottom}, {&top}), Error);
  ExpectError([&] { two_inferred.SetUp({&bottom}, {&top}); },
              {"layer 'rs' (Reshape)", "more than one -1"});
  ReshapeLayer<TypeParam> negative(this->Param("shape { dim: 4 dim: -4 }"));
  ExpectError([&] { negative.SetUp({&bottom}, {&top}); }, {"layer 'rs' (Reshape)", "-4"});
  // A 0 must have a bottom axis to copy.
  ReshapeLayer<TypeParam> no_axis(this->Param("shape { dim: 0 dim: 0 dim: 0 }"));
  ExpectError([&] { no_axis.SetUp({&bottom}, {&top}); }, {"layer 'rs' (Reshape)", "dim 2"});
  ReshapeLayer<TypeParam> bad_num_axes(this->Param("shape { dim: 16 } num_axes: -2"));
  ExpectError([&] { bad_num_axes.SetUp({&bottom}, {&top}); }, {"layer 'rs' (Reshape)", "num_axes"});
  ReshapeLayer<TypeParam> past_end(this->Param("shape { dim: 8 } axis: 1 num_axes: 2"));
  ExpectError([&] { past_end.SetUp({&bottom}, {&top}); }, {"layer 'rs' (Reshape)"});
  ReshapeLayer<TypeParam> bad_axis(this->Param("shape { dim: 1 } axis: 3"));
  ExpectError([&] { bad_axis.SetUp({&bottom}, {&top}); }, {"layer 'rs' (Reshape)", "axis"});
  ReshapeLayer<TypeParam> in_place(this->Param("shape { dim: 16 }"));
  ExpectError([&] { in_place.SetUp({&bottom}, {&bottom}); }, {"layer 'rs' (Reshape)"});
}

TYPED_TEST(ReshapeLayerTest, IsRegistered) {
  EXPECT_STREQ(LayerRegistry<TypeParam>::CreateLayer(this->Param(""))->type(), "Reshape");
}

}  // namespace doppio
