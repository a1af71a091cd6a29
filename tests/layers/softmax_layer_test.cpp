#include "doppio/layers/softmax_layer.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <memory>

#include "gradient_checker.hpp"
#include "test_util.hpp"

namespace doppio {

template <typename Dtype>
class SoftmaxLayerTest : public ::testing::Test {
 protected:
  Blob<Dtype> bottom_;
  Blob<Dtype> top_;
  std::vector<Blob<Dtype>*> bottom_vec_{&bottom_};
  std::vector<Blob<Dtype>*> top_vec_{&top_};
  Rng rng_{1234};
};
TYPED_TEST_SUITE(SoftmaxLayerTest, TestDtypes);

TYPED_TEST(SoftmaxLayerTest, ForwardOneTwoThree) {
  this->bottom_.Reshape({2, 3});
  const TypeParam values[] = {1, 2, 3, 1001, 1002, 1003};  // the second row tests stability
  std::copy(values, values + 6, this->bottom_.mutable_cpu_data());
  SoftmaxLayer<TypeParam> layer(ParseText<LayerParameter>("name: 's' type: 'Softmax'"));
  layer.SetUp(this->bottom_vec_, this->top_vec_);
  layer.Forward(this->bottom_vec_, this->top_vec_);
  // e^k / (e + e^2 + e^3).
  const double expected[] = {0.09003057317, 0.24472847105, 0.66524095578};
  for (int n = 0; n < 2; ++n) {
    for (int c = 0; c < 3; ++c) {
      EXPECT_NEAR(this->top_.cpu_data()[n * 3 + c], expected[c], 1e-6);
    }
  }
}

TYPED_TEST(SoftmaxLayerTest, ForwardOverChannelsPerPosition) {
  // Shape {1, 2, 2}, softmax over axis 1: position 0 has (0, ln 3) -> (1/4, 3/4),
  // position 1 has (0, 0) -> (1/2, 1/2).
  this->bottom_.Reshape({1, 2, 2});
  TypeParam* x = this->bottom_.mutable_cpu_data();
  x[0] = 0;
  x[1] = 0;
  x[2] = std::log(TypeParam(3));
  x[3] = 0;
  SoftmaxLayer<TypeParam> layer(ParseText<LayerParameter>("name: 's' type: 'Softmax'"));
  layer.SetUp(this->bottom_vec_, this->top_vec_);
  layer.Forward(this->bottom_vec_, this->top_vec_);
  const TypeParam* y = this->top_.cpu_data();
  EXPECT_NEAR(y[0], 0.25, 1e-6);
  EXPECT_NEAR(y[1], 0.5, 1e-6);
  EXPECT_NEAR(y[2], 0.75, 1e-6);
  EXPECT_NEAR(y[3], 0.5, 1e-6);
}

TYPED_TEST(SoftmaxLayerTest, NegativeAxisAndInPlace) {
  this->bottom_.Reshape({2, 3, 4});
  FillGaussian(&this->bottom_, this->rng_);
  SoftmaxLayer<TypeParam> layer(
      ParseText<LayerParameter>("name: 's' type: 'Softmax' softmax_param { axis: -1 }"));
  layer.SetUp(this->bottom_vec_, this->top_vec_);
  layer.Forward(this->bottom_vec_, this->top_vec_);
  for (int i = 0; i < 6; ++i) {
    double sum = 0;
    for (int k = 0; k < 4; ++k) sum += this->top_.cpu_data()[i * 4 + k];
    EXPECT_NEAR(sum, 1.0, 1e-6);
  }
  Blob<TypeParam> copy;
  copy.CopyFrom(this->bottom_, false, true);
  std::vector<Blob<TypeParam>*> in_place{&copy};
  SoftmaxLayer<TypeParam> layer2(
      ParseText<LayerParameter>("name: 's' type: 'Softmax' softmax_param { axis: -1 }"));
  layer2.SetUp(in_place, in_place);
  layer2.Forward(in_place, in_place);
  for (int i = 0; i < copy.count(); ++i) {
    EXPECT_NEAR(copy.cpu_data()[i], this->top_.cpu_data()[i], 1e-7);
  }
  // In-place backward equals out-of-place backward.
  rng_gaussian<TypeParam>(copy.count(), 0, 1, this->rng_, this->top_.mutable_cpu_diff());
  layer.Forward(this->bottom_vec_, this->top_vec_);
  layer.Backward(this->top_vec_, {true}, this->bottom_vec_);
  cpu_copy(copy.count(), this->top_.cpu_diff(), copy.mutable_cpu_diff());
  layer2.Backward(in_place, {true}, in_place);
  for (int i = 0; i < copy.count(); ++i) {
    EXPECT_NEAR(copy.cpu_diff()[i], this->bottom_.cpu_diff()[i], 1e-6);
  }
}

TYPED_TEST(SoftmaxLayerTest, Gradient) {
  this->bottom_.Reshape({2, 3, 2, 2});
  FillGaussian(&this->bottom_, this->rng_);
  SoftmaxLayer<TypeParam> layer(ParseText<LayerParameter>("name: 's' type: 'Softmax'"));
  GradientChecker<TypeParam> checker(1e-2, 1e-3);
  checker.CheckGradientExhaustive(&layer, this->bottom_vec_, this->top_vec_);
}

TYPED_TEST(SoftmaxLayerTest, GradientRows) {
  this->bottom_.Reshape({3, 5});
  FillGaussian(&this->bottom_, this->rng_);
  SoftmaxLayer<TypeParam> layer(ParseText<LayerParameter>("name: 's' type: 'Softmax'"));
  GradientChecker<TypeParam> checker(1e-2, 1e-3);
  checker.CheckGradientExhaustive(&layer, this->bottom_vec_, this->top_vec_);
}

TYPED_TEST(SoftmaxLayerTest, GradientAxis2) {
  this->bottom_.Reshape({2, 2, 3});
  FillGaussian(&this->bottom_, this->rng_);
  SoftmaxLayer<TypeParam> layer(
      ParseText<LayerParameter>("name: 's' type: 'Softmax' softmax_param { axis: 2 }"));
  GradientChecker<TypeParam> checker(1e-2, 1e-3);
  checker.CheckGradientExhaustive(&layer, this->bottom_vec_, this->top_vec_);
}

TYPED_TEST(SoftmaxLayerTest, BadAxisNamesLayer) {
  this->bottom_.Reshape({2, 3});
  SoftmaxLayer<TypeParam> layer(
      ParseText<LayerParameter>("name: 'sm' type: 'Softmax' softmax_param { axis: 2 }"));
  ExpectError([&] { layer.SetUp(this->bottom_vec_, this->top_vec_); },
              {"layer 'sm'", "softmax_param.axis"});
}

}  // namespace doppio
