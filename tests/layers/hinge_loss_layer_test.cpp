#include "doppio/layers/hinge_loss_layer.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "gradient_checker.hpp"
#include "test_util.hpp"

namespace doppio {

template <typename Dtype>
class HingeLossLayerTest : public ::testing::Test {
 protected:
  void FillCase() {
    x_.Reshape({2, 3});
    const Dtype x[] = {1, -0.5, 0.2, 0.3, 2, -2};
    std::copy(x, x + 6, x_.mutable_cpu_data());
    labels_.Reshape({2});
    labels_.mutable_cpu_data()[0] = 0;
    labels_.mutable_cpu_data()[1] = 2;
  }
  // Random scores kept away from the hinge points x = +-1, where the loss has a kink.
  void FillRandom() {
    x_.Reshape({4, 5});
    FillGaussian<Dtype>(&x_, rng_, 0, 1.5);
    for (int i = 0; i < x_.count(); ++i) {
      Dtype& v = x_.mutable_cpu_data()[i];
      if (std::fabs(std::fabs(v) - 1) < Dtype(0.05)) v += Dtype(0.2);
    }
    labels_.Reshape({4});
    for (int i = 0; i < 4; ++i) labels_.mutable_cpu_data()[i] = Dtype(rng_.Below(5));
  }

  Blob<Dtype> x_;
  Blob<Dtype> labels_;
  Blob<Dtype> loss_;
  std::vector<Blob<Dtype>*> bottom_vec_{&x_, &labels_};
  std::vector<Blob<Dtype>*> top_vec_{&loss_};
  Rng rng_{11};
};
TYPED_TEST_SUITE(HingeLossLayerTest, TestDtypes);

TYPED_TEST(HingeLossLayerTest, ForwardL1AndL2) {
  this->FillCase();
  // Margins max(0, 1 - t x): sample 0 (label 0): 0, 0.5, 1.2; sample 1 (label 2): 1.3, 3, 3.
  HingeLossLayer<TypeParam> l1(ParseText<LayerParameter>("name: 'h' type: 'HingeLoss'"));
  l1.SetUp(this->bottom_vec_, this->top_vec_);
  l1.Forward(this->bottom_vec_, this->top_vec_);
  EXPECT_NEAR(this->loss_.cpu_data()[0], 9.0 / 2, 1e-5);
  HingeLossLayer<TypeParam> l2(
      ParseText<LayerParameter>("name: 'h' type: 'HingeLoss' hinge_loss_param { norm: L2 }"));
  l2.SetUp(this->bottom_vec_, this->top_vec_);
  l2.Forward(this->bottom_vec_, this->top_vec_);
  EXPECT_NEAR(this->loss_.cpu_data()[0], 21.38 / 2, 1e-5);
}

TYPED_TEST(HingeLossLayerTest, GradientL1) {
  this->FillRandom();
  HingeLossLayer<TypeParam> layer(ParseText<LayerParameter>("name: 'h' type: 'HingeLoss'"));
  GradientChecker<TypeParam> checker(1e-2, 1e-3);
  checker.CheckGradientExhaustive(&layer, this->bottom_vec_, this->top_vec_, 0);
}

TYPED_TEST(HingeLossLayerTest, GradientL2) {
  this->FillRandom();
  HingeLossLayer<TypeParam> layer(ParseText<LayerParameter>(
      "name: 'h' type: 'HingeLoss' loss_weight: 0.7 hinge_loss_param { norm: L2 }"));
  GradientChecker<TypeParam> checker(1e-2, 1e-3);
  checker.CheckGradientExhaustive(&layer, this->bottom_vec_, this->top_vec_, 0);
}

TYPED_TEST(HingeLossLayerTest, BadLabels) {
  this->FillCase();
  this->labels_.mutable_cpu_data()[1] = 3;
  HingeLossLayer<TypeParam> layer(ParseText<LayerParameter>("name: 'hinge' type: 'HingeLoss'"));
  layer.SetUp(this->bottom_vec_, this->top_vec_);
  ExpectError([&] { layer.Forward(this->bottom_vec_, this->top_vec_); },
              {"layer 'hinge' (HingeLoss)", "label value 3"});
  this->labels_.Reshape({2, 2});
  HingeLossLayer<TypeParam> layer2(ParseText<LayerParameter>("name: 'hinge' type: 'HingeLoss'"));
  ExpectError([&] { layer2.SetUp(this->bottom_vec_, this->top_vec_); },
              {"layer 'hinge'", "one label per sample"});
}

}  // namespace doppio
