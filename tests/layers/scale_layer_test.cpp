#include "doppio/layers/scale_layer.hpp"

#include <gtest/gtest.h>

#include <string>

#include "gradient_checker.hpp"
#include "test_util.hpp"

namespace doppio {

template <typename Dtype>
class ScaleLayerTest : public ::testing::Test {
 protected:
  void FillSmall() {
    x_.Reshape({2, 3});
    const Dtype x[] = {1, 2, 3, 4, 5, 6};
    std::copy(x, x + 6, x_.mutable_cpu_data());
  }

  Blob<Dtype> x_;
  Blob<Dtype> scale_;
  Blob<Dtype> y_;
  std::vector<Blob<Dtype>*> one_{&x_};
  std::vector<Blob<Dtype>*> two_{&x_, &scale_};
  std::vector<Blob<Dtype>*> top_{&y_};
  Rng rng_{13};
};
TYPED_TEST_SUITE(ScaleLayerTest, TestDtypes);

TYPED_TEST(ScaleLayerTest, ForwardHandComputed) {
  this->FillSmall();
  ScaleLayer<TypeParam> layer(ParseText<LayerParameter>("name: 's' type: 'Scale'"));
  layer.SetUp(this->one_, this->top_);
  ASSERT_EQ(layer.blobs().size(), 1u);
  EXPECT_EQ(layer.blobs()[0]->shape(), std::vector<int>{3});
  for (int d = 0; d < 3; ++d) EXPECT_EQ(layer.blobs()[0]->cpu_data()[d], TypeParam(1));
  const TypeParam s[] = {1, 10, 100};
  std::copy(s, s + 3, layer.blobs()[0]->mutable_cpu_data());
  layer.Forward(this->one_, this->top_);
  const TypeParam expected[] = {1, 20, 300, 4, 50, 600};
  for (int i = 0; i < 6; ++i) EXPECT_NEAR(this->y_.cpu_data()[i], expected[i], 1e-5);

  // With bias_term: parameter blobs are scale then bias.
  ScaleLayer<TypeParam> biased(
      ParseText<LayerParameter>("name: 's' type: 'Scale' scale_param { bias_term: true "
                                "bias_filler { type: 'constant' value: 0.5 } }"));
  biased.SetUp(this->one_, this->top_);
  ASSERT_EQ(biased.blobs().size(), 2u);
  std::copy(s, s + 3, biased.blobs()[0]->mutable_cpu_data());
  biased.blobs()[1]->mutable_cpu_data()[1] = -0.5;
  biased.Forward(this->one_, this->top_);
  const TypeParam expected2[] = {1.5, 19.5, 300.5, 4.5, 49.5, 600.5};
  for (int i = 0; i < 6; ++i) EXPECT_NEAR(this->y_.cpu_data()[i], expected2[i], 1e-5);

  // Scale as a bottom over axis 0, and a scalar scale.
  this->scale_.Reshape({2});
  this->scale_.mutable_cpu_data()[0] = 2;
  this->scale_.mutable_cpu_data()[1] = -1;
  ScaleLayer<TypeParam> bottom(
      ParseText<LayerParameter>("name: 's' type: 'Scale' scale_param { axis: 0 }"));
  bottom.SetUp(this->two_, this->top_);
  EXPECT_TRUE(bottom.blobs().empty());
  bottom.Forward(this->two_, this->top_);
  const TypeParam expected3[] = {2, 4, 6, -4, -5, -6};
  for (int i = 0; i < 6; ++i) EXPECT_NEAR(this->y_.cpu_data()[i], expected3[i], 1e-5);
  ScaleLayer<TypeParam> scalar(
      ParseText<LayerParameter>("name: 's' type: 'Scale' scale_param { num_axes: 0 "
                                "filler { type: 'constant' value: 3 } }"));
  scalar.SetUp(this->one_, this->top_);
  EXPECT_EQ(scalar.blobs()[0]->num_axes(), 0);
  scalar.Forward(this->one_, this->top_);
  for (int i = 0; i < 6; ++i) EXPECT_NEAR(this->y_.cpu_data()[i], 3 * (i + 1), 1e-5);
}

TYPED_TEST(ScaleLayerTest, StoredBlobsAreUsed) {
  this->FillSmall();
  LayerParameter param =
      ParseText<LayerParameter>("name: 's' type: 'Scale' scale_param { bias_term: true }");
  Blob<TypeParam> s({3}), b({3});
  for (int d = 0; d < 3; ++d) {
    s.mutable_cpu_data()[d] = TypeParam(d + 1);
    b.mutable_cpu_data()[d] = TypeParam(10 * (d + 1));
  }
  s.ToProto(param.add_blobs());
  b.ToProto(param.add_blobs());
  ScaleLayer<TypeParam> layer(param);
  layer.SetUp(this->one_, this->top_);
  ASSERT_EQ(layer.blobs().size(), 2u);
  layer.Forward(this->one_, this->top_);
  const TypeParam expected[] = {11, 24, 39, 14, 30, 48};
  for (int i = 0; i < 6; ++i) EXPECT_NEAR(this->y_.cpu_data()[i], expected[i], 1e-5);
  // The bias parameter is the very blob the internal bias layer updates.
  cpu_set(3, TypeParam(0), layer.blobs()[1]->mutable_cpu_diff());
  cpu_set(6, TypeParam(1), this->y_.mutable_cpu_diff());
  layer.Backward(this->top_, {false}, this->one_);
  for (int d = 0; d < 3; ++d) EXPECT_NEAR(layer.blobs()[1]->cpu_diff()[d], 2, 1e-6);
}

TYPED_TEST(ScaleLayerTest, GradientLearned) {
  for (const char* param :
       {"", "bias_term: true", "axis: 0 num_axes: 2", "axis: 1 num_axes: 2 bias_term: true",
        "num_axes: 0 bias_term: true", "axis: -1", "axis: 2 num_axes: -1 bias_term: true"}) {
    SCOPED_TRACE(param);
    this->x_.Reshape({2, 3, 2, 2});
    FillGaussian(&this->x_, this->rng_);
    ScaleLayer<TypeParam> layer(ParseText<LayerParameter>(
        std::string("name: 's' type: 'Scale' scale_param { filler { type: 'gaussian' } "
                    "bias_filler { type: 'gaussian' } ") +
        param + " }"));
    GradientChecker<TypeParam> checker(1e-2, 1e-3);
    checker.CheckGradientExhaustive(&layer, this->one_, this->top_);
  }
}

TYPED_TEST(ScaleLayerTest, GradientScaleBottom) {
  const std::vector<std::pair<std::vector<int>, std::string>> cases = {
      {{3}, ""},
      {{2, 3}, "axis: 0"},
      {{2, 2}, "axis: 2 bias_term: true bias_filler { type: 'gaussian' }"},
      {{}, ""},
      {{3, 2}, "bias_term: true bias_filler { type: 'gaussian' }"}};
  for (const auto& c : cases) {
    SCOPED_TRACE(c.second);
    this->x_.Reshape({2, 3, 2, 2});
    FillGaussian(&this->x_, this->rng_);
    this->scale_.Reshape(c.first);
    FillGaussian(&this->scale_, this->rng_);
    ScaleLayer<TypeParam> layer(
        ParseText<LayerParameter>("name: 's' type: 'Scale' scale_param { " + c.second + " }"));
    GradientChecker<TypeParam> checker(1e-2, 1e-3);
    checker.CheckGradientExhaustive(&layer, this->two_, this->top_);
  }
}

TYPED_TEST(ScaleLayerTest, InPlaceMatchesOutOfPlace) {
  for (bool two_bottoms : {false, true}) {
    SCOPED_TRACE(two_bottoms);
    this->x_.Reshape({2, 3, 2});
    FillGaussian(&this->x_, this->rng_);
    this->scale_.Reshape({3});
    FillGaussian(&this->scale_, this->rng_);
    Blob<TypeParam> io;
    io.CopyFrom(this->x_, false, true);
    std::vector<Blob<TypeParam>*> in_place_bottom{&io};
    if (two_bottoms) in_place_bottom.push_back(&this->scale_);
    std::vector<Blob<TypeParam>*> in_place_top{&io};
    const std::vector<Blob<TypeParam>*>& bottom = two_bottoms ? this->two_ : this->one_;
    const LayerParameter param = ParseText<LayerParameter>(
        "name: 's' type: 'Scale' scale_param { bias_term: true filler { type: 'gaussian' } "
        "bias_filler { type: 'gaussian' } }");
    ScaleLayer<TypeParam> a(param), b(param);
    a.SetUp(bottom, this->top_);
    b.SetUp(in_place_bottom, in_place_top);
    ASSERT_EQ(a.blobs().size(), b.blobs().size());
    for (std::size_t k = 0; k < a.blobs().size(); ++k) {
      b.blobs()[k]->CopyFrom(*a.blobs()[k]);
      cpu_set(a.blobs()[k]->count(), TypeParam(0), a.blobs()[k]->mutable_cpu_diff());
      cpu_set(b.blobs()[k]->count(), TypeParam(0), b.blobs()[k]->mutable_cpu_diff());
    }
    a.Forward(bottom, this->top_);
    b.Forward(in_place_bottom, in_place_top);
    for (int i = 0; i < 12; ++i) EXPECT_NEAR(io.cpu_data()[i], this->y_.cpu_data()[i], 1e-6);
    rng_gaussian<TypeParam>(12, 0, 1, this->rng_, this->y_.mutable_cpu_diff());
    cpu_copy(12, this->y_.cpu_diff(), io.mutable_cpu_diff());
    std::vector<bool> down(bottom.size(), true);
    a.Backward(this->top_, down, bottom);
    std::vector<TypeParam> scale_diff(this->scale_.cpu_diff(), this->scale_.cpu_diff() + 3);
    b.Backward(in_place_top, down, in_place_bottom);
    for (int i = 0; i < 12; ++i) EXPECT_NEAR(io.cpu_diff()[i], this->x_.cpu_diff()[i], 1e-5);
    for (std::size_t k = 0; k < a.blobs().size(); ++k) {
      for (int i = 0; i < a.blobs()[k]->count(); ++i) {
        EXPECT_NEAR(b.blobs()[k]->cpu_diff()[i], a.blobs()[k]->cpu_diff()[i], 1e-5);
      }
    }
    if (two_bottoms) {
      for (int d = 0; d < 3; ++d) EXPECT_NEAR(this->scale_.cpu_diff()[d], scale_diff[d], 1e-5);
    }
  }
}

TYPED_TEST(ScaleLayerTest, BadShapes) {
  this->x_.Reshape({2, 3, 4});
  this->scale_.Reshape({4});
  ScaleLayer<TypeParam> mismatch(ParseText<LayerParameter>("name: 'sc' type: 'Scale'"));
  ExpectError([&] { mismatch.SetUp(this->two_, this->top_); },
              {"layer 'sc' (Scale)", "does not match"});
  ScaleLayer<TypeParam> axis(
      ParseText<LayerParameter>("name: 'sc' type: 'Scale' scale_param { axis: -4 }"));
  ExpectError([&] { axis.SetUp(this->one_, this->top_); }, {"layer 'sc'", "scale_param.axis"});
  ScaleLayer<TypeParam> too_many(
      ParseText<LayerParameter>("name: 'sc' type: 'Scale' scale_param { axis: 2 num_axes: 2 }"));
  ExpectError([&] { too_many.SetUp(this->one_, this->top_); }, {"layer 'sc'", "num_axes"});
  ScaleLayer<TypeParam> biased(ParseText<LayerParameter>(
      "name: 'sc' type: 'Scale' scale_param { axis: 2 bias_term: true }"));
  this->scale_.Reshape({3, 4});
  ExpectError([&] { biased.SetUp(this->two_, this->top_); },
              {"layer 'sc' (Scale)", "scale_param.axis"});
  LayerParameter stored = ParseText<LayerParameter>("name: 'sc' type: 'Scale'");
  Blob<TypeParam> wrong({5});
  wrong.ToProto(stored.add_blobs());
  ScaleLayer<TypeParam> from_model(stored);
  ExpectError([&] { from_model.SetUp(this->one_, this->top_); }, {"layer 'sc'"});
}

}  // namespace doppio
