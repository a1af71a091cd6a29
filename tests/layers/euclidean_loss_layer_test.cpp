#include "doppio/layers/euclidean_loss_layer.hpp"

#include <gtest/gtest.h>

#include "gradient_checker.hpp"
#include "test_util.hpp"

namespace doppio {

template <typename Dtype>
class EuclideanLossLayerTest : public ::testing::Test {
 protected:
  Blob<Dtype> a_;
  Blob<Dtype> b_;
  Blob<Dtype> loss_;
  std::vector<Blob<Dtype>*> bottom_vec_{&a_, &b_};
  std::vector<Blob<Dtype>*> top_vec_{&loss_};
  Rng rng_{99};
};
TYPED_TEST_SUITE(EuclideanLossLayerTest, TestDtypes);

TYPED_TEST(EuclideanLossLayerTest, ForwardHandComputed) {
  this->a_.Reshape({2, 2});
  this->b_.Reshape({2, 2});
  const TypeParam a[] = {1, 2, 3, 4};
  const TypeParam b[] = {0, 0, 1, 1};
  std::copy(a, a + 4, this->a_.mutable_cpu_data());
  std::copy(b, b + 4, this->b_.mutable_cpu_data());
  EuclideanLossLayer<TypeParam> layer(
      ParseText<LayerParameter>("name: 'l2' type: 'EuclideanLoss'"));
  layer.SetUp(this->bottom_vec_, this->top_vec_);
  layer.Forward(this->bottom_vec_, this->top_vec_);
  // (1 + 4 + 4 + 9) / (2 * 2)
  EXPECT_NEAR(this->loss_.cpu_data()[0], 4.5, 1e-6);
  // d/da = (a - b) / N, d/db = -(a - b) / N.
  layer.Backward(this->top_vec_, {true, true}, this->bottom_vec_);
  const TypeParam diff[] = {1, 2, 2, 3};
  for (int i = 0; i < 4; ++i) {
    EXPECT_NEAR(this->a_.cpu_diff()[i], diff[i] / 2, 1e-6);
    EXPECT_NEAR(this->b_.cpu_diff()[i], -diff[i] / 2, 1e-6);
  }
}

TYPED_TEST(EuclideanLossLayerTest, GradientBothBottoms) {
  this->a_.Reshape({3, 2, 2});
  this->b_.Reshape({3, 4});
  FillGaussian(&this->a_, this->rng_);
  FillGaussian(&this->b_, this->rng_);
  EuclideanLossLayer<TypeParam> layer(
      ParseText<LayerParameter>("name: 'l2' type: 'EuclideanLoss' loss_weight: 2.5"));
  EXPECT_TRUE(layer.AllowForceBackward(0));
  EXPECT_TRUE(layer.AllowForceBackward(1));
  GradientChecker<TypeParam> checker(1e-2, 1e-3);
  checker.CheckGradientExhaustive(&layer, this->bottom_vec_, this->top_vec_);
}

TYPED_TEST(EuclideanLossLayerTest, SizeMismatch) {
  this->a_.Reshape({3, 4});
  this->b_.Reshape({3, 5});
  EuclideanLossLayer<TypeParam> layer(
      ParseText<LayerParameter>("name: 'l2' type: 'EuclideanLoss'"));
  ExpectError([&] { layer.SetUp(this->bottom_vec_, this->top_vec_); },
              {"layer 'l2' (EuclideanLoss)"});
}

}  // namespace doppio
