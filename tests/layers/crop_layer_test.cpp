#include "doppio/layers/crop_layer.hpp"

#include <gtest/gtest.h>

#include "doppio/core/layer_registry.hpp"
#include "gradient_checker.hpp"
#include "test_util.hpp"

namespace doppio {

template <typename Dtype>
class CropLayerTest : public ::testing::Test {
 protected:
  CropLayerTest() : image_({1, 1, 4, 5}), like_({1, 1, 2, 3}) {
    // image_(0, 0, h, w) = 5 h + w.
    for (int i = 0; i < image_.count(); ++i) image_.mutable_cpu_data()[i] = i;
  }
  static LayerParameter Param(const std::string& crop_param) {
    return ParseText<LayerParameter>("name: 'crop' type: 'Crop' crop_param { " + crop_param + " }");
  }
  Blob<Dtype> image_, like_, top_;
  Rng rng_{777};
};
TYPED_TEST_SUITE(CropLayerTest, TestDtypes);

TYPED_TEST(CropLayerTest, OffsetPerAxis) {
  CropLayer<TypeParam> layer(this->Param("offset: 1 offset: 2"));
  layer.SetUp({&this->image_, &this->like_}, {&this->top_});
  EXPECT_EQ(this->top_.shape(), std::vector<int>({1, 1, 2, 3}));
  layer.Forward({&this->image_, &this->like_}, {&this->top_});
  ExpectValues(this->top_, {7, 8, 9, 12, 13, 14});
  SetDiffs(&this->top_, {1, 2, 3, 4, 5, 6});
  layer.Backward({&this->top_}, {true, false}, {&this->image_, &this->like_});
  ExpectDiffs(this->image_, {0, 0, 0, 0, 0,  //
                             0, 0, 1, 2, 3,  //
                             0, 0, 4, 5, 6,  //
                             0, 0, 0, 0, 0});
}

TYPED_TEST(CropLayerTest, OneOffsetForAllAxes) {
  CropLayer<TypeParam> layer(this->Param("offset: 1"));
  layer.SetUp({&this->image_, &this->like_}, {&this->top_});
  layer.Forward({&this->image_, &this->like_}, {&this->top_});
  ExpectValues(this->top_, {6, 7, 8, 11, 12, 13});
}

TYPED_TEST(CropLayerTest, NoOffsetCropsFromTheCorner) {
  CropLayer<TypeParam> layer(this->Param(""));
  layer.SetUp({&this->image_, &this->like_}, {&this->top_});
  layer.Forward({&this->image_, &this->like_}, {&this->top_});
  ExpectValues(this->top_, {0, 1, 2, 5, 6, 7});
}

TYPED_TEST(CropLayerTest, CropsFromAxisOneOn) {
  Blob<TypeParam> bottom({2, 3, 4, 5}), like({7, 2, 2, 2});
  for (int i = 0; i < bottom.count(); ++i) bottom.mutable_cpu_data()[i] = i;
  CropLayer<TypeParam> layer(this->Param("axis: 1 offset: 1 offset: 0 offset: 2"));
  layer.SetUp({&bottom, &like}, {&this->top_});
  // Axis 0 keeps bottom[0]'s size; the others take bottom[1]'s.
  EXPECT_EQ(this->top_.shape(), std::vector<int>({2, 2, 2, 2}));
  layer.Forward({&bottom, &like}, {&this->top_});
  // top(n, c, h, w) = bottom(n, c + 1, h, w + 2) = 60 n + 20 (c + 1) + 5 h + w + 2.
  ExpectValues(this->top_, {22, 23, 27, 28, 42, 43, 47, 48,  //
                            82, 83, 87, 88, 102, 103, 107, 108});
}

TYPED_TEST(CropLayerTest, Gradient) {
  Blob<TypeParam> bottom({2, 3, 4, 5}), like({2, 2, 2, 3});
  FillGaussian(&bottom, this->rng_);
  CropLayer<TypeParam> layer(this->Param("axis: 1 offset: 1 offset: 1 offset: 2"));
  GradientChecker<TypeParam> checker(1e-2, 1e-3);
  checker.CheckGradientExhaustive(&layer, {&bottom, &like}, {&this->top_}, 0);
}

TYPED_TEST(CropLayerTest, OnlyTheFirstBottomTakesGradient) {
  CropLayer<TypeParam> layer(this->Param(""));
  EXPECT_TRUE(layer.AllowForceBackward(0));
  EXPECT_FALSE(layer.AllowForceBackward(1));
}

TYPED_TEST(CropLayerTest, RejectsWindowsOutsideTheBottom) {
  CropLayer<TypeParam> layer(this->Param("offset: 1 offset: 3"));
  EXPECT_THROW(layer.SetUp({&this->image_, &this->like_}, {&this->top_}), Error);
  ExpectError(
      [&] {
        layer.SetUp({&this->image_, &this->like_}, {&this->top_});
      },
      {"layer 'crop' (Crop)", "axis 3", "offset 3"});
  Blob<TypeParam> big({1, 1, 5, 3});
  CropLayer<TypeParam> too_big(this->Param(""));
  ExpectError(
      [&] {
        too_big.SetUp({&this->image_, &big}, {&this->top_});
      },
      {"layer 'crop' (Crop)", "axis 2"});
}

TYPED_TEST(CropLayerTest, RejectsBadParameters) {
  CropLayer<TypeParam> offsets(this->Param("offset: 1 offset: 1 offset: 1"));
  ExpectError(
      [&] {
        offsets.SetUp({&this->image_, &this->like_}, {&this->top_});
      },
      {"layer 'crop' (Crop)", "offset"});
  CropLayer<TypeParam> axis(this->Param("axis: 4"));
  ExpectError(
      [&] {
        axis.SetUp({&this->image_, &this->like_}, {&this->top_});
      },
      {"layer 'crop' (Crop)", "axis"});
  Blob<TypeParam> flat({1, 1, 2});
  CropLayer<TypeParam> axes(this->Param(""));
  ExpectError(
      [&] {
        axes.SetUp({&this->image_, &flat}, {&this->top_});
      },
      {"layer 'crop' (Crop)", "bottom[1]"});
}

TYPED_TEST(CropLayerTest, IsRegistered) {
  EXPECT_STREQ(LayerRegistry<TypeParam>::CreateLayer(this->Param(""))->type(), "Crop");
}

}  // namespace doppio
