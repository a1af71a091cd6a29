#include "doppio/layers/softmax_loss_layer.hpp"

#include <gtest/gtest.h>

#include <string>

#include "gradient_checker.hpp"
#include "test_util.hpp"

namespace doppio {

template <typename Dtype>
class SoftmaxWithLossLayerTest : public ::testing::Test {
 protected:
  // Predictions {2, 3, 1, 2}: every position scores the classes (1, 2, 3), so the loss of a
  // position with label l is log(e + e^2 + e^3) - (l + 1) = 3.40760596 - (l + 1).
  void FillConstantCase(const std::vector<Dtype>& labels) {
    pred_.Reshape({2, 3, 1, 2});
    Dtype* x = pred_.mutable_cpu_data();
    for (int n = 0; n < 2; ++n) {
      for (int c = 0; c < 3; ++c) {
        for (int k = 0; k < 2; ++k) x[(n * 3 + c) * 2 + k] = Dtype(c + 1);
      }
    }
    label_.Reshape({2, 1, 1, 2});
    std::copy(labels.begin(), labels.end(), label_.mutable_cpu_data());
  }

  Dtype LossFor(const std::string& loss_param) {
    SoftmaxWithLossLayer<Dtype> layer(ParseText<LayerParameter>(
        "name: 'loss' type: 'SoftmaxWithLoss' loss_param { " + loss_param + " }"));
    layer.SetUp(bottom_vec_, top_vec_);
    return layer.Forward(bottom_vec_, top_vec_);
  }

  void RandomCase(const std::vector<int>& shape, int axis, int ignore_label) {
    pred_.Reshape(shape);
    FillGaussian<Dtype>(&pred_, rng_, 0, 2);
    std::vector<int> label_shape = shape;
    const int classes = shape[axis];
    label_shape[axis] = 1;
    label_.Reshape(label_shape);
    for (int i = 0; i < label_.count(); ++i) {
      label_.mutable_cpu_data()[i] = Dtype(rng_.Below(classes));
    }
    // Make sure some positions are ignored when an ignore label is in range.
    if (ignore_label >= 0) {
      label_.mutable_cpu_data()[0] = Dtype(ignore_label);
      label_.mutable_cpu_data()[label_.count() - 1] = Dtype(ignore_label);
    }
  }

  Blob<Dtype> pred_;
  Blob<Dtype> label_;
  Blob<Dtype> loss_;
  Blob<Dtype> prob_;
  std::vector<Blob<Dtype>*> bottom_vec_{&pred_, &label_};
  std::vector<Blob<Dtype>*> top_vec_{&loss_};
  Rng rng_{4321};
};
TYPED_TEST_SUITE(SoftmaxWithLossLayerTest, TestDtypes);

TYPED_TEST(SoftmaxWithLossLayerTest, TwoSamples) {
  this->pred_.Reshape({2, 3});
  const TypeParam x[] = {1, 2, 3, 1, 2, 3};
  std::copy(x, x + 6, this->pred_.mutable_cpu_data());
  this->label_.Reshape({2});
  this->label_.mutable_cpu_data()[0] = 2;
  this->label_.mutable_cpu_data()[1] = 0;
  SoftmaxWithLossLayer<TypeParam> layer(
      ParseText<LayerParameter>("name: 'loss' type: 'SoftmaxWithLoss'"));
  layer.SetUp(this->bottom_vec_, this->top_vec_);
  EXPECT_EQ(this->loss_.num_axes(), 0);
  const TypeParam loss = layer.Forward(this->bottom_vec_, this->top_vec_);
  // (0.40760596 + 2.40760596) / 2
  EXPECT_NEAR(this->loss_.cpu_data()[0], 1.40760596, 1e-6);
  EXPECT_NEAR(loss, 1.40760596, 1e-6);
}

TYPED_TEST(SoftmaxWithLossLayerTest, LossWeightScalesReturnedLoss) {
  this->FillConstantCase({2, 0, 1, 1});
  SoftmaxWithLossLayer<TypeParam> layer(
      ParseText<LayerParameter>("name: 'loss' type: 'SoftmaxWithLoss' loss_weight: 3"));
  layer.SetUp(this->bottom_vec_, this->top_vec_);
  const TypeParam loss = layer.Forward(this->bottom_vec_, this->top_vec_);
  // (0.40760596 + 2.40760596 + 1.40760596 * 2) / 4, weighted by 3.
  EXPECT_NEAR(this->loss_.cpu_data()[0], 1.40760596, 1e-6);
  EXPECT_NEAR(loss, 3 * 1.40760596, 1e-5);
}

TYPED_TEST(SoftmaxWithLossLayerTest, EveryNormalizationWithIgnoreLabel) {
  // Labels per position: n0 (2, 0), n1 (ignored, 1). Valid losses sum to
  // 0.40760596 + 2.40760596 + 1.40760596 = 4.22281788 over 3 valid of 4 positions, batch 2.
  this->FillConstantCase({2, 0, -1, 1});
  const double sum = 4.22281788;
  EXPECT_NEAR(this->LossFor("ignore_label: -1 normalization: FULL"), sum / 4, 1e-6);
  EXPECT_NEAR(this->LossFor("ignore_label: -1 normalization: VALID"), sum / 3, 1e-6);
  EXPECT_NEAR(this->LossFor("ignore_label: -1 normalization: BATCH_SIZE"), sum / 2, 1e-6);
  EXPECT_NEAR(this->LossFor("ignore_label: -1 normalization: NONE"), sum, 1e-5);
  EXPECT_NEAR(this->LossFor("ignore_label: -1"), sum / 3, 1e-6);  // default VALID
  EXPECT_NEAR(this->LossFor("ignore_label: -1 normalize: true"), sum / 3, 1e-6);
  EXPECT_NEAR(this->LossFor("ignore_label: -1 normalize: false"), sum / 2, 1e-6);
  EXPECT_NEAR(this->LossFor("ignore_label: -1 normalize: false normalization: FULL"), sum / 4,
              1e-6);
}

TYPED_TEST(SoftmaxWithLossLayerTest, AllIgnoredGivesZero) {
  this->FillConstantCase({1, 1, 1, 1});
  EXPECT_EQ(this->LossFor("ignore_label: 1"), TypeParam(0));
}

TYPED_TEST(SoftmaxWithLossLayerTest, SecondTopHoldsProbabilities) {
  this->FillConstantCase({2, 0, 1, 1});
  this->top_vec_.push_back(&this->prob_);
  SoftmaxWithLossLayer<TypeParam> layer(
      ParseText<LayerParameter>("name: 'loss' type: 'SoftmaxWithLoss'"));
  layer.SetUp(this->bottom_vec_, this->top_vec_);
  layer.Forward(this->bottom_vec_, this->top_vec_);
  ASSERT_EQ(this->prob_.shape(), this->pred_.shape());
  const double expected[] = {0.09003057317, 0.24472847105, 0.66524095578};
  for (int n = 0; n < 2; ++n) {
    for (int c = 0; c < 3; ++c) {
      for (int k = 0; k < 2; ++k) {
        EXPECT_NEAR(this->prob_.cpu_data()[(n * 3 + c) * 2 + k], expected[c], 1e-6);
      }
    }
  }
}

TYPED_TEST(SoftmaxWithLossLayerTest, GradientEveryNormalization) {
  for (const char* mode : {"FULL", "VALID", "BATCH_SIZE", "NONE"}) {
    SCOPED_TRACE(mode);
    this->RandomCase({2, 4, 2, 3}, 1, -1);
    SoftmaxWithLossLayer<TypeParam> layer(ParseText<LayerParameter>(
        std::string("name: 'loss' type: 'SoftmaxWithLoss' loss_param { normalization: ") + mode +
        " }"));
    GradientChecker<TypeParam> checker(1e-2, 1e-3);
    checker.CheckGradientExhaustive(&layer, this->bottom_vec_, this->top_vec_, 0);
  }
}

TYPED_TEST(SoftmaxWithLossLayerTest, GradientWithIgnoreLabelEveryNormalization) {
  for (const char* mode : {"FULL", "VALID", "BATCH_SIZE", "NONE"}) {
    SCOPED_TRACE(mode);
    this->RandomCase({2, 4, 2, 3}, 1, 2);
    SoftmaxWithLossLayer<TypeParam> layer(ParseText<LayerParameter>(
        std::string("name: 'loss' type: 'SoftmaxWithLoss' loss_param { ignore_label: 2 "
                    "normalization: ") +
        mode + " }"));
    GradientChecker<TypeParam> checker(1e-2, 1e-3);
    checker.CheckGradientExhaustive(&layer, this->bottom_vec_, this->top_vec_, 0);
  }
}

TYPED_TEST(SoftmaxWithLossLayerTest, GradientLegacyNormalizeAndLossWeight) {
  this->RandomCase({3, 4}, 1, -1);
  SoftmaxWithLossLayer<TypeParam> layer(ParseText<LayerParameter>(
      "name: 'loss' type: 'SoftmaxWithLoss' loss_weight: 0.5 loss_param { normalize: false }"));
  GradientChecker<TypeParam> checker(1e-2, 1e-3);
  checker.CheckGradientExhaustive(&layer, this->bottom_vec_, this->top_vec_, 0);
}

TYPED_TEST(SoftmaxWithLossLayerTest, GradientOtherAxis) {
  this->RandomCase({2, 2, 4}, 2, -1);
  SoftmaxWithLossLayer<TypeParam> layer(
      ParseText<LayerParameter>("name: 'loss' type: 'SoftmaxWithLoss' softmax_param { axis: -1 }"));
  GradientChecker<TypeParam> checker(1e-2, 1e-3);
  checker.CheckGradientExhaustive(&layer, this->bottom_vec_, this->top_vec_, 0);
}

TYPED_TEST(SoftmaxWithLossLayerTest, LabelOutOfRangeNamesLayerAndValue) {
  this->FillConstantCase({2, 0, 7, 1});
  SoftmaxWithLossLayer<TypeParam> layer(
      ParseText<LayerParameter>("name: 'xent' type: 'SoftmaxWithLoss'"));
  layer.SetUp(this->bottom_vec_, this->top_vec_);
  ExpectError([&] { layer.Forward(this->bottom_vec_, this->top_vec_); },
              {"layer 'xent' (SoftmaxWithLoss)", "label value 7"});
  this->label_.mutable_cpu_data()[2] = -3;
  ExpectError([&] { layer.Forward(this->bottom_vec_, this->top_vec_); },
              {"layer 'xent'", "label value -3"});
}

TYPED_TEST(SoftmaxWithLossLayerTest, LabelCountMismatch) {
  this->FillConstantCase({2, 0, 1, 1});
  this->label_.Reshape({2, 3});
  SoftmaxWithLossLayer<TypeParam> layer(
      ParseText<LayerParameter>("name: 'xent' type: 'SoftmaxWithLoss'"));
  ExpectError([&] { layer.SetUp(this->bottom_vec_, this->top_vec_); },
              {"layer 'xent'", "number of labels (6"});
  this->label_.Reshape({3, 1, 1, 2});  // first dimension differs
  SoftmaxWithLossLayer<TypeParam> layer2(
      ParseText<LayerParameter>("name: 'xent' type: 'SoftmaxWithLoss'"));
  ExpectError([&] { layer2.SetUp(this->bottom_vec_, this->top_vec_); }, {"layer 'xent'"});
}

TYPED_TEST(SoftmaxWithLossLayerTest, NoGradientToLabels) {
  this->FillConstantCase({2, 0, 1, 1});
  SoftmaxWithLossLayer<TypeParam> layer(
      ParseText<LayerParameter>("name: 'xent' type: 'SoftmaxWithLoss'"));
  layer.SetUp(this->bottom_vec_, this->top_vec_);
  EXPECT_TRUE(layer.IsLossLayer());
  EXPECT_TRUE(layer.AllowForceBackward(0));
  EXPECT_FALSE(layer.AllowForceBackward(1));
  layer.Forward(this->bottom_vec_, this->top_vec_);
  ExpectError(
      [&] {
        layer.Backward(this->top_vec_, {true, true}, this->bottom_vec_);
      },
      {"layer 'xent'", "label"});
}

}  // namespace doppio
