#include "doppio/layers/sigmoid_cross_entropy_loss_layer.hpp"

#include <gtest/gtest.h>

#include <string>

#include "gradient_checker.hpp"
#include "test_util.hpp"

namespace doppio {

template <typename Dtype>
class SigmoidCrossEntropyLossLayerTest : public ::testing::Test {
 protected:
  Dtype LossFor(const std::string& extra) {
    SigmoidCrossEntropyLossLayer<Dtype> layer(
        ParseText<LayerParameter>("name: 'bce' type: 'SigmoidCrossEntropyLoss' " + extra));
    layer.SetUp(bottom_vec_, top_vec_);
    return layer.Forward(bottom_vec_, top_vec_);
  }
  void Set(const std::vector<int>& shape, const std::vector<Dtype>& x,
           const std::vector<Dtype>& t) {
    x_.Reshape(shape);
    t_.Reshape(shape);
    std::copy(x.begin(), x.end(), x_.mutable_cpu_data());
    std::copy(t.begin(), t.end(), t_.mutable_cpu_data());
  }

  Blob<Dtype> x_;
  Blob<Dtype> t_;
  Blob<Dtype> loss_;
  std::vector<Blob<Dtype>*> bottom_vec_{&x_, &t_};
  std::vector<Blob<Dtype>*> top_vec_{&loss_};
  Rng rng_{7};
};
TYPED_TEST_SUITE(SigmoidCrossEntropyLossLayerTest, TestDtypes);

TYPED_TEST(SigmoidCrossEntropyLossLayerTest, ForwardHandComputed) {
  // x = 0, t = 1: -log s(0) = log 2 = 0.69314718.
  // x = 2, t = 0: -log(1 - s(2)) = 2 + log(1 + e^-2) = 2.12692801.
  // x = -1, t = 0.5: -0.5 log s(-1) - 0.5 log s(1) = 0.5 (1.31326169 + 0.31326169) = 0.81326169.
  this->Set({2, 3}, {0, 2, -1, 0, 2, -1}, {1, 0, 0.5, 1, 0, 0.5});
  const double sum = 2 * (0.69314718 + 2.12692801 + 0.81326169);
  // Neither normalization nor normalize: BATCH_SIZE, as in Caffe.
  EXPECT_NEAR(this->LossFor(""), sum / 2, 1e-5);
  EXPECT_NEAR(this->LossFor("loss_param { normalization: VALID }"), sum / 6, 1e-5);
  EXPECT_NEAR(this->LossFor("loss_param { normalization: FULL }"), sum / 6, 1e-5);
  EXPECT_NEAR(this->LossFor("loss_param { normalization: NONE }"), sum, 1e-5);
  EXPECT_NEAR(this->LossFor("loss_param { normalize: true }"), sum / 6, 1e-5);
  EXPECT_NEAR(this->LossFor("loss_param { normalize: false }"), sum / 2, 1e-5);
}

TYPED_TEST(SigmoidCrossEntropyLossLayerTest, IgnoreLabel) {
  this->Set({2, 2}, {0, 2, -1, 5}, {1, -1, -1, 0});
  // Valid: (0, 1) -> 0.69314718 and (5, 0) -> 5 + log(1 + e^-5) = 5.00671535.
  const double sum = 0.69314718 + 5.00671535;
  EXPECT_NEAR(this->LossFor("loss_param { ignore_label: -1 normalization: VALID }"), sum / 2, 1e-5);
  EXPECT_NEAR(this->LossFor("loss_param { ignore_label: -1 normalization: FULL }"), sum / 4, 1e-5);
  EXPECT_NEAR(this->LossFor("loss_param { ignore_label: -1 }"), sum / 2, 1e-5);  // BATCH_SIZE
}

TYPED_TEST(SigmoidCrossEntropyLossLayerTest, StableForLargeInputs) {
  this->Set({1, 2}, {100, -100}, {0, 1});
  EXPECT_NEAR(this->LossFor("loss_param { normalization: NONE }"), 200, 1e-3);
  this->Set({1, 2}, {100, -100}, {1, 0});
  EXPECT_NEAR(this->LossFor("loss_param { normalization: NONE }"), 0, 1e-6);
}

TYPED_TEST(SigmoidCrossEntropyLossLayerTest, Gradient) {
  for (const char* extra : {"", "loss_param { normalization: VALID }",
                            "loss_weight: 3 loss_param { normalization: FULL }"}) {
    SCOPED_TRACE(extra);
    this->x_.Reshape({3, 2, 2});
    this->t_.Reshape({3, 2, 2});
    FillGaussian<TypeParam>(&this->x_, this->rng_, 0, 2);
    FillUniform<TypeParam>(&this->t_, this->rng_, 0, 1);
    SigmoidCrossEntropyLossLayer<TypeParam> layer(ParseText<LayerParameter>(
        std::string("name: 'bce' type: 'SigmoidCrossEntropyLoss' ") + extra));
    GradientChecker<TypeParam> checker(1e-2, 1e-3);
    checker.CheckGradientExhaustive(&layer, this->bottom_vec_, this->top_vec_, 0);
  }
}

TYPED_TEST(SigmoidCrossEntropyLossLayerTest, GradientWithIgnoreLabel) {
  for (const char* mode : {"VALID", "FULL", "BATCH_SIZE", "NONE"}) {
    SCOPED_TRACE(mode);
    this->x_.Reshape({3, 4});
    this->t_.Reshape({3, 4});
    FillGaussian<TypeParam>(&this->x_, this->rng_, 0, 2);
    for (int i = 0; i < 12; ++i) {
      this->t_.mutable_cpu_data()[i] = i % 3 == 0 ? TypeParam(-1) : TypeParam(i % 2);
    }
    SigmoidCrossEntropyLossLayer<TypeParam> layer(ParseText<LayerParameter>(
        std::string("name: 'bce' type: 'SigmoidCrossEntropyLoss' loss_param { ignore_label: -1 "
                    "normalization: ") +
        mode + " }"));
    GradientChecker<TypeParam> checker(1e-2, 1e-3);
    checker.CheckGradientExhaustive(&layer, this->bottom_vec_, this->top_vec_, 0);
    // Ignored positions take no gradient.
    layer.Backward(this->top_vec_, {true, false}, this->bottom_vec_);
    for (int i = 0; i < 12; i += 3) EXPECT_EQ(this->x_.cpu_diff()[i], TypeParam(0));
  }
}

TYPED_TEST(SigmoidCrossEntropyLossLayerTest, CountMismatch) {
  this->x_.Reshape({2, 3});
  this->t_.Reshape({2, 2});
  SigmoidCrossEntropyLossLayer<TypeParam> layer(
      ParseText<LayerParameter>("name: 'bce' type: 'SigmoidCrossEntropyLoss'"));
  ExpectError([&] { layer.SetUp(this->bottom_vec_, this->top_vec_); },
              {"layer 'bce' (SigmoidCrossEntropyLoss)", "same count"});
}

}  // namespace doppio
