#include "doppio/layers/concat_layer.hpp"

#include <gtest/gtest.h>

#include "doppio/core/layer_registry.hpp"
#include "gradient_checker.hpp"
#include "test_util.hpp"

namespace doppio {

template <typename Dtype>
class ConcatLayerTest : public ::testing::Test {
 protected:
  static LayerParameter Param(const std::string& concat_param) {
    return ParseText<LayerParameter>("name: 'cat' type: 'Concat' concat_param { " + concat_param +
                                     " }");
  }
  Rng rng_{20240601};
};
TYPED_TEST_SUITE(ConcatLayerTest, TestDtypes);

TYPED_TEST(ConcatLayerTest, ForwardAndBackwardAlongChannels) {
  Blob<TypeParam> a({2, 1, 2}), b({2, 2, 2}), top;
  SetValues(&a, {1, 2, 3, 4});
  SetValues(&b, {5, 6, 7, 8, 9, 10, 11, 12});
  ConcatLayer<TypeParam> layer(this->Param(""));
  layer.SetUp({&a, &b}, {&top});
  EXPECT_EQ(top.shape(), std::vector<int>({2, 3, 2}));
  layer.Forward({&a, &b}, {&top});
  ExpectValues(top, {1, 2, 5, 6, 7, 8, 3, 4, 9, 10, 11, 12});
  SetDiffs(&top, {-1, -2, -5, -6, -7, -8, -3, -4, -9, -10, -11, -12});
  layer.Backward({&top}, {true, true}, {&a, &b});
  ExpectDiffs(a, {-1, -2, -3, -4});
  ExpectDiffs(b, {-5, -6, -7, -8, -9, -10, -11, -12});
}

TYPED_TEST(ConcatLayerTest, ForwardAlongNumWithLegacyConcatDim) {
  Blob<TypeParam> a({1, 2}), b({2, 2}), top;
  SetValues(&a, {1, 2});
  SetValues(&b, {3, 4, 5, 6});
  ConcatLayer<TypeParam> layer(this->Param("concat_dim: 0"));
  layer.SetUp({&a, &b}, {&top});
  EXPECT_EQ(top.shape(), std::vector<int>({3, 2}));
  layer.Forward({&a, &b}, {&top});
  ExpectValues(top, {1, 2, 3, 4, 5, 6});
}

TYPED_TEST(ConcatLayerTest, ForwardAlongNegativeAxis) {
  Blob<TypeParam> a({2, 1}), b({2, 2}), top;
  SetValues(&a, {1, 2});
  SetValues(&b, {3, 4, 5, 6});
  ConcatLayer<TypeParam> layer(this->Param("axis: -1"));
  layer.SetUp({&a, &b}, {&top});
  EXPECT_EQ(top.shape(), std::vector<int>({2, 3}));
  layer.Forward({&a, &b}, {&top});
  ExpectValues(top, {1, 3, 4, 2, 5, 6});
}

TYPED_TEST(ConcatLayerTest, SingleBottomPassesThrough) {
  Blob<TypeParam> a({2, 3}), top;
  SetValues(&a, {1, 2, 3, 4, 5, 6});
  ConcatLayer<TypeParam> layer(this->Param(""));
  layer.SetUp({&a}, {&top});
  layer.Forward({&a}, {&top});
  EXPECT_EQ(top.shape(), a.shape());
  EXPECT_EQ(top.cpu_data(), a.cpu_data());
  ExpectValues(top, {1, 2, 3, 4, 5, 6});
  SetDiffs(&top, {6, 5, 4, 3, 2, 1});
  layer.Backward({&top}, {true}, {&a});
  ExpectDiffs(a, {6, 5, 4, 3, 2, 1});
}

TYPED_TEST(ConcatLayerTest, GradientAlongNum) {
  Blob<TypeParam> a({2, 3, 2, 3}), b({3, 3, 2, 3}), top;
  FillGaussian(&a, this->rng_);
  FillGaussian(&b, this->rng_);
  ConcatLayer<TypeParam> layer(this->Param("axis: 0"));
  GradientChecker<TypeParam> checker(1e-2, 1e-3);
  checker.CheckGradientExhaustive(&layer, {&a, &b}, {&top});
  EXPECT_EQ(top.shape(), std::vector<int>({5, 3, 2, 3}));
}

TYPED_TEST(ConcatLayerTest, GradientAlongChannels) {
  Blob<TypeParam> a({2, 3, 2, 3}), b({2, 1, 2, 3}), c({2, 2, 2, 3}), top;
  FillGaussian(&a, this->rng_);
  FillGaussian(&b, this->rng_);
  FillGaussian(&c, this->rng_);
  ConcatLayer<TypeParam> layer(this->Param("axis: 1"));
  GradientChecker<TypeParam> checker(1e-2, 1e-3);
  checker.CheckGradientExhaustive(&layer, {&a, &b, &c}, {&top});
  EXPECT_EQ(top.shape(), std::vector<int>({2, 6, 2, 3}));
}

TYPED_TEST(ConcatLayerTest, MismatchedShapesNameLayerBottomAndShapes) {
  Blob<TypeParam> a({2, 3, 4}), b({2, 3, 4}), c({2, 3, 5}), top;
  ConcatLayer<TypeParam> layer(this->Param("axis: 1"));
  EXPECT_THROW(layer.SetUp({&a, &b, &c}, {&top}), Error);
  ExpectError(
      [&] {
        layer.SetUp({&a, &b, &c}, {&top});
      },
      {"layer 'cat' (Concat)", "bottom[2]", "2 3 5", "2 3 4"});
  Blob<TypeParam> d({2, 3});
  ConcatLayer<TypeParam> layer2(this->Param("axis: 1"));
  ExpectError([&] { layer2.SetUp({&a, &d}, {&top}); }, {"layer 'cat' (Concat)", "bottom[1]"});
}

TYPED_TEST(ConcatLayerTest, RejectsBadAxisSettings) {
  Blob<TypeParam> a({2, 3}), b({2, 3}), top;
  ConcatLayer<TypeParam> both(this->Param("axis: 1 concat_dim: 1"));
  ExpectError([&] { both.SetUp({&a, &b}, {&top}); }, {"layer 'cat' (Concat)", "concat_dim"});
  ConcatLayer<TypeParam> far(this->Param("axis: 2"));
  ExpectError([&] { far.SetUp({&a, &b}, {&top}); }, {"layer 'cat' (Concat)", "axis"});
  ConcatLayer<TypeParam> legacy(this->Param("concat_dim: 2"));
  ExpectError([&] { legacy.SetUp({&a, &b}, {&top}); }, {"layer 'cat' (Concat)", "concat_dim"});
}

TYPED_TEST(ConcatLayerTest, IsRegistered) {
  EXPECT_STREQ(LayerRegistry<TypeParam>::CreateLayer(this->Param(""))->type(), "Concat");
}

}  // namespace doppio
