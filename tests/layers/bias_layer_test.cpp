#include "doppio/layers/bias_layer.hpp"

#include <gtest/gtest.h>

#include <string>

#include "gradient_checker.hpp"
#include "test_util.hpp"

namespace doppio {

template <typename Dtype>
class BiasLayerTest : public ::testing::Test {
 protected:
  Blob<Dtype> x_;
  Blob<Dtype> bias_;
  Blob<Dtype> y_;
  std::vector<Blob<Dtype>*> one_{&x_};
  std::vector<Blob<Dtype>*> two_{&x_, &bias_};
  std::vector<Blob<Dtype>*> top_{&y_};
  Rng rng_{31};
};
TYPED_TEST_SUITE(BiasLayerTest, TestDtypes);

TYPED_TEST(BiasLayerTest, ForwardLearnedAndBottom) {
  this->x_.Reshape({2, 3});
  const TypeParam x[] = {1, 2, 3, 4, 5, 6};
  std::copy(x, x + 6, this->x_.mutable_cpu_data());
  BiasLayer<TypeParam> learned(ParseText<LayerParameter>(
      "name: 'b' type: 'Bias' bias_param { filler { type: 'constant' value: 10 } }"));
  learned.SetUp(this->one_, this->top_);
  ASSERT_EQ(learned.blobs().size(), 1u);
  EXPECT_EQ(learned.blobs()[0]->shape(), std::vector<int>{3});
  learned.blobs()[0]->mutable_cpu_data()[2] = 100;
  learned.Forward(this->one_, this->top_);
  const TypeParam expected[] = {11, 12, 103, 14, 15, 106};
  for (int i = 0; i < 6; ++i) EXPECT_NEAR(this->y_.cpu_data()[i], expected[i], 1e-6);
  // Bias as a bottom over axis 0: one value per row.
  this->bias_.Reshape({2});
  this->bias_.mutable_cpu_data()[0] = -1;
  this->bias_.mutable_cpu_data()[1] = 1;
  BiasLayer<TypeParam> bottom(
      ParseText<LayerParameter>("name: 'b' type: 'Bias' bias_param { axis: 0 }"));
  bottom.SetUp(this->two_, this->top_);
  EXPECT_TRUE(bottom.blobs().empty());
  bottom.Forward(this->two_, this->top_);
  const TypeParam expected2[] = {0, 1, 2, 5, 6, 7};
  for (int i = 0; i < 6; ++i) EXPECT_NEAR(this->y_.cpu_data()[i], expected2[i], 1e-6);
  // A scalar bias bottom covers everything.
  this->bias_.Reshape(std::vector<int>{});
  this->bias_.mutable_cpu_data()[0] = 0.5;
  BiasLayer<TypeParam> scalar(ParseText<LayerParameter>("name: 'b' type: 'Bias'"));
  scalar.SetUp(this->two_, this->top_);
  scalar.Forward(this->two_, this->top_);
  for (int i = 0; i < 6; ++i) EXPECT_NEAR(this->y_.cpu_data()[i], x[i] + 0.5, 1e-6);
}

TYPED_TEST(BiasLayerTest, GradientLearnedAxisVariants) {
  for (const char* param : {"", "axis: 0 num_axes: 2", "axis: 1 num_axes: 2", "num_axes: 0",
                            "axis: -1", "axis: 2 num_axes: -1"}) {
    SCOPED_TRACE(param);
    this->x_.Reshape({2, 3, 2, 2});
    FillGaussian(&this->x_, this->rng_);
    BiasLayer<TypeParam> layer(ParseText<LayerParameter>(
        std::string("name: 'b' type: 'Bias' bias_param { filler { type: 'gaussian' } ") + param +
        " }"));
    GradientChecker<TypeParam> checker(1e-2, 1e-3);
    checker.CheckGradientExhaustive(&layer, this->one_, this->top_);
  }
}

TYPED_TEST(BiasLayerTest, GradientBiasBottom) {
  const std::vector<std::pair<std::vector<int>, std::string>> cases = {
      {{3}, ""}, {{2, 3}, "axis: 0"}, {{2, 2}, "axis: 2"}, {{}, ""}};
  for (const auto& c : cases) {
    SCOPED_TRACE(c.second);
    this->x_.Reshape({2, 3, 2, 2});
    FillGaussian(&this->x_, this->rng_);
    this->bias_.Reshape(c.first);
    FillGaussian(&this->bias_, this->rng_);
    BiasLayer<TypeParam> layer(
        ParseText<LayerParameter>("name: 'b' type: 'Bias' bias_param { " + c.second + " }"));
    GradientChecker<TypeParam> checker(1e-2, 1e-3);
    checker.CheckGradientExhaustive(&layer, this->two_, this->top_);
  }
}

TYPED_TEST(BiasLayerTest, InPlaceMatchesOutOfPlace) {
  this->x_.Reshape({2, 3, 2});
  FillGaussian(&this->x_, this->rng_);
  Blob<TypeParam> io;
  io.CopyFrom(this->x_, false, true);
  std::vector<Blob<TypeParam>*> io_vec{&io};
  const LayerParameter param = ParseText<LayerParameter>(
      "name: 'b' type: 'Bias' bias_param { filler { type: 'gaussian' } }");
  BiasLayer<TypeParam> a(param), b(param);
  a.SetUp(this->one_, this->top_);
  b.SetUp(io_vec, io_vec);
  b.blobs()[0]->CopyFrom(*a.blobs()[0]);
  a.Forward(this->one_, this->top_);
  b.Forward(io_vec, io_vec);
  for (int i = 0; i < 12; ++i) EXPECT_NEAR(io.cpu_data()[i], this->y_.cpu_data()[i], 1e-6);
  rng_gaussian<TypeParam>(12, 0, 1, this->rng_, this->y_.mutable_cpu_diff());
  cpu_copy(12, this->y_.cpu_diff(), io.mutable_cpu_diff());
  cpu_set(3, TypeParam(1), a.blobs()[0]->mutable_cpu_diff());  // parameter diffs accumulate
  cpu_set(3, TypeParam(1), b.blobs()[0]->mutable_cpu_diff());
  a.Backward(this->top_, {true}, this->one_);
  b.Backward(io_vec, {true}, io_vec);
  for (int i = 0; i < 12; ++i) EXPECT_NEAR(io.cpu_diff()[i], this->x_.cpu_diff()[i], 1e-6);
  for (int d = 0; d < 3; ++d) {
    double sum = 1;
    for (int n = 0; n < 2; ++n) {
      for (int k = 0; k < 2; ++k) sum += this->y_.cpu_diff()[(n * 3 + d) * 2 + k];
    }
    EXPECT_NEAR(a.blobs()[0]->cpu_diff()[d], sum, 1e-5);
    EXPECT_NEAR(b.blobs()[0]->cpu_diff()[d], sum, 1e-5);
  }
}

TYPED_TEST(BiasLayerTest, BadShapes) {
  this->x_.Reshape({2, 3, 4});
  this->bias_.Reshape({4});
  BiasLayer<TypeParam> mismatch(ParseText<LayerParameter>("name: 'bb' type: 'Bias'"));
  ExpectError([&] { mismatch.SetUp(this->two_, this->top_); },
              {"layer 'bb' (Bias)", "does not match"});
  BiasLayer<TypeParam> axis(
      ParseText<LayerParameter>("name: 'bb' type: 'Bias' bias_param { axis: 3 }"));
  ExpectError([&] { axis.SetUp(this->one_, this->top_); }, {"layer 'bb'", "bias_param.axis"});
  BiasLayer<TypeParam> too_many(
      ParseText<LayerParameter>("name: 'bb' type: 'Bias' bias_param { num_axes: 3 }"));
  ExpectError([&] { too_many.SetUp(this->one_, this->top_); }, {"layer 'bb'", "num_axes"});
  BiasLayer<TypeParam> negative(
      ParseText<LayerParameter>("name: 'bb' type: 'Bias' bias_param { num_axes: -2 }"));
  ExpectError([&] { negative.SetUp(this->one_, this->top_); }, {"layer 'bb'", "num_axes"});
}

}  // namespace doppio
