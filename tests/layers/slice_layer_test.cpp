#include "doppio/layers/slice_layer.hpp"

#include <gtest/gtest.h>

#include "doppio/core/layer_registry.hpp"
#include "gradient_checker.hpp"
#include "test_util.hpp"

namespace doppio {

template <typename Dtype>
class SliceLayerTest : public ::testing::Test {
 protected:
  static LayerParameter Param(const std::string& slice_param) {
    return ParseText<LayerParameter>("name: 'cut' type: 'Slice' slice_param { " + slice_param +
                                     " }");
  }
  Rng rng_{8675309};
};
TYPED_TEST_SUITE(SliceLayerTest, TestDtypes);

TYPED_TEST(SliceLayerTest, ForwardAndBackwardAtSlicePoints) {
  Blob<TypeParam> bottom({2, 5}), t0, t1, t2;
  SetValues(&bottom, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  SliceLayer<TypeParam> layer(this->Param("axis: 1 slice_point: 1 slice_point: 3"));
  layer.SetUp({&bottom}, {&t0, &t1, &t2});
  EXPECT_EQ(t0.shape(), std::vector<int>({2, 1}));
  EXPECT_EQ(t1.shape(), std::vector<int>({2, 2}));
  EXPECT_EQ(t2.shape(), std::vector<int>({2, 2}));
  layer.Forward({&bottom}, {&t0, &t1, &t2});
  ExpectValues(t0, {0, 5});
  ExpectValues(t1, {1, 2, 6, 7});
  ExpectValues(t2, {3, 4, 8, 9});
  SetDiffs(&t0, {10, 15});
  SetDiffs(&t1, {11, 12, 16, 17});
  SetDiffs(&t2, {13, 14, 18, 19});
  layer.Backward({&t0, &t1, &t2}, {true}, {&bottom});
  ExpectDiffs(bottom, {10, 11, 12, 13, 14, 15, 16, 17, 18, 19});
}

TYPED_TEST(SliceLayerTest, EqualSplitWithLegacySliceDim) {
  Blob<TypeParam> bottom({4, 2}), t0, t1;
  SetValues(&bottom, {0, 1, 2, 3, 4, 5, 6, 7});
  SliceLayer<TypeParam> layer(this->Param("slice_dim: 0"));
  layer.SetUp({&bottom}, {&t0, &t1});
  EXPECT_EQ(t0.shape(), std::vector<int>({2, 2}));
  layer.Forward({&bottom}, {&t0, &t1});
  ExpectValues(t0, {0, 1, 2, 3});
  ExpectValues(t1, {4, 5, 6, 7});
}

TYPED_TEST(SliceLayerTest, EqualSplitAlongLastAxis) {
  Blob<TypeParam> bottom({2, 4}), t0, t1;
  SetValues(&bottom, {0, 1, 2, 3, 4, 5, 6, 7});
  SliceLayer<TypeParam> layer(this->Param("axis: -1"));
  layer.SetUp({&bottom}, {&t0, &t1});
  layer.Forward({&bottom}, {&t0, &t1});
  ExpectValues(t0, {0, 1, 4, 5});
  ExpectValues(t1, {2, 3, 6, 7});
}

TYPED_TEST(SliceLayerTest, SingleTopPassesThrough) {
  Blob<TypeParam> bottom({2, 3}), top;
  SetValues(&bottom, {1, 2, 3, 4, 5, 6});
  SliceLayer<TypeParam> layer(this->Param(""));
  layer.SetUp({&bottom}, {&top});
  layer.Forward({&bottom}, {&top});
  EXPECT_EQ(top.cpu_data(), bottom.cpu_data());
  ExpectValues(top, {1, 2, 3, 4, 5, 6});
}

TYPED_TEST(SliceLayerTest, GradientAtSlicePoints) {
  Blob<TypeParam> bottom({2, 6, 2, 3}), t0, t1, t2;
  FillGaussian(&bottom, this->rng_);
  SliceLayer<TypeParam> layer(this->Param("slice_point: 1 slice_point: 4"));
  GradientChecker<TypeParam> checker(1e-2, 1e-3);
  checker.CheckGradientExhaustive(&layer, {&bottom}, {&t0, &t1, &t2});
  EXPECT_EQ(t2.shape(), std::vector<int>({2, 2, 2, 3}));
}

TYPED_TEST(SliceLayerTest, GradientEqualSplit) {
  Blob<TypeParam> bottom({4, 3, 2}), t0, t1;
  FillGaussian(&bottom, this->rng_);
  SliceLayer<TypeParam> layer(this->Param("axis: 0"));
  GradientChecker<TypeParam> checker(1e-2, 1e-3);
  checker.CheckGradientExhaustive(&layer, {&bottom}, {&t0, &t1});
  EXPECT_EQ(t1.shape(), std::vector<int>({2, 3, 2}));
}

TYPED_TEST(SliceLayerTest, RejectsBadSlicePoints) {
  Blob<TypeParam> bottom({2, 5}), t0, t1, t2;
  SliceLayer<TypeParam> decreasing(this->Param("slice_point: 3 slice_point: 2"));
  EXPECT_THROW(decreasing.SetUp({&bottom}, {&t0, &t1, &t2}), Error);
  ExpectError(
      [&] {
        decreasing.SetUp({&bottom}, {&t0, &t1, &t2});
      },
      {"layer 'cut' (Slice)", "slice_point[1]"});
  SliceLayer<TypeParam> repeated(this->Param("slice_point: 2 slice_point: 2"));
  ExpectError([&] { repeated.SetUp({&bottom}, {&t0, &t1, &t2}); }, {"layer 'cut' (Slice)"});
  SliceLayer<TypeParam> zero(this->Param("slice_point: 0 slice_point: 2"));
  ExpectError([&] { zero.SetUp({&bottom}, {&t0, &t1, &t2}); }, {"layer 'cut' (Slice)"});
  SliceLayer<TypeParam> outside(this->Param("slice_point: 2 slice_point: 5"));
  ExpectError(
      [&] {
        outside.SetUp({&bottom}, {&t0, &t1, &t2});
      },
      {"layer 'cut' (Slice)", "size 5"});
  SliceLayer<TypeParam> too_few(this->Param("slice_point: 2"));
  ExpectError(
      [&] {
        too_few.SetUp({&bottom}, {&t0, &t1, &t2});
      },
      {"layer 'cut' (Slice)", "slice_point"});
}

TYPED_TEST(SliceLayerTest, RejectsUnevenEqualSplit) {
  Blob<TypeParam> bottom({2, 5}), t0, t1;
  SliceLayer<TypeParam> layer(this->Param(""));
  ExpectError([&] { layer.SetUp({&bottom}, {&t0, &t1}); }, {"layer 'cut' (Slice)", "2 5"});
  SliceLayer<TypeParam> both(this->Param("axis: 1 slice_dim: 1"));
  Blob<TypeParam> even({2, 4});
  ExpectError([&] { both.SetUp({&even}, {&t0, &t1}); }, {"layer 'cut' (Slice)", "slice_dim"});
}

TYPED_TEST(SliceLayerTest, IsRegistered) {
  EXPECT_STREQ(LayerRegistry<TypeParam>::CreateLayer(this->Param(""))->type(), "Slice");
}

}  // namespace doppio
