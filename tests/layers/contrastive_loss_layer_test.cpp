#include "doppio/layers/contrastive_loss_layer.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "gradient_checker.hpp"
#include "test_util.hpp"

namespace doppio {

template <typename Dtype>
class ContrastiveLossLayerTest : public ::testing::Test {
 protected:
  void FillCase() {
    a_.Reshape({2, 2, 1, 1});
    b_.Reshape({2, 2, 1, 1});
    y_.Reshape({2, 1, 1, 1});
    const Dtype a[] = {1, 0, 0, 0};
    const Dtype b[] = {0, 0, 0, 0.5};
    std::copy(a, a + 4, a_.mutable_cpu_data());
    std::copy(b, b + 4, b_.mutable_cpu_data());
    y_.mutable_cpu_data()[0] = 1;
    y_.mutable_cpu_data()[1] = 0;
  }
  // Random pairs whose distances stay away from the margin's kink.
  void FillRandom(Dtype margin, bool legacy) {
    a_.Reshape({5, 3, 1, 1});
    b_.Reshape({5, 3, 1, 1});
    y_.Reshape({5, 1, 1, 1});
    for (int n = 0; n < 5; ++n) {
      Dtype d2 = 0;
      do {
        rng_gaussian<Dtype>(3, 0, 0.6, rng_, a_.mutable_cpu_data() + n * 3);
        rng_gaussian<Dtype>(3, 0, 0.6, rng_, b_.mutable_cpu_data() + n * 3);
        d2 = 0;
        for (int k = 0; k < 3; ++k) {
          const Dtype d = a_.cpu_data()[n * 3 + k] - b_.cpu_data()[n * 3 + k];
          d2 += d * d;
        }
      } while (std::fabs((legacy ? d2 : std::sqrt(d2)) - margin) < 0.1 || d2 < 0.01);
      y_.mutable_cpu_data()[n] = Dtype(n % 2);
    }
  }
  Dtype Run(const std::string& param) {
    ContrastiveLossLayer<Dtype> layer(ParseText<LayerParameter>(
        "name: 'c' type: 'ContrastiveLoss' contrastive_loss_param { " + param + " }"));
    layer.SetUp(bottom_vec_, top_vec_);
    return layer.Forward(bottom_vec_, top_vec_);
  }

  Blob<Dtype> a_;
  Blob<Dtype> b_;
  Blob<Dtype> y_;
  Blob<Dtype> loss_;
  std::vector<Blob<Dtype>*> bottom_vec_{&a_, &b_, &y_};
  std::vector<Blob<Dtype>*> top_vec_{&loss_};
  Rng rng_{5};
};
TYPED_TEST_SUITE(ContrastiveLossLayerTest, TestDtypes);

TYPED_TEST(ContrastiveLossLayerTest, ForwardBothVersions) {
  this->FillCase();
  // Similar pair: d^2 = 1. Dissimilar pair: d = 0.5, margin 1:
  // (1 - 0.5)^2 = 0.25, legacy max(1 - 0.25, 0) = 0.75. Divided by 2N = 4.
  EXPECT_NEAR(this->Run(""), (1 + 0.25) / 4, 1e-6);
  EXPECT_NEAR(this->Run("legacy_version: true"), (1 + 0.75) / 4, 1e-6);
  // Margin 0.4 < d: the dissimilar pair costs nothing in the new version; in the legacy one
  // max(0.4 - 0.25, 0) = 0.15.
  EXPECT_NEAR(this->Run("margin: 0.4"), 1.0 / 4, 1e-6);
  EXPECT_NEAR(this->Run("margin: 0.4 legacy_version: true"), (1 + 0.15) / 4, 1e-6);
}

TYPED_TEST(ContrastiveLossLayerTest, Gradient) {
  for (int bottom = 0; bottom < 2; ++bottom) {
    this->FillRandom(1, false);
    ContrastiveLossLayer<TypeParam> layer(
        ParseText<LayerParameter>("name: 'c' type: 'ContrastiveLoss'"));
    // The analytic gradient divides by d + 1e-4 as Caffe does: a relative error ~1e-4.
    GradientChecker<TypeParam> checker(1e-2, 2e-3);
    checker.CheckGradientExhaustive(&layer, this->bottom_vec_, this->top_vec_, bottom);
  }
}

TYPED_TEST(ContrastiveLossLayerTest, GradientLegacy) {
  for (int bottom = 0; bottom < 2; ++bottom) {
    this->FillRandom(1.5, true);
    ContrastiveLossLayer<TypeParam> layer(
        ParseText<LayerParameter>("name: 'c' type: 'ContrastiveLoss' loss_weight: 2 "
                                  "contrastive_loss_param { margin: 1.5 legacy_version: true }"));
    GradientChecker<TypeParam> checker(1e-2, 1e-3);
    checker.CheckGradientExhaustive(&layer, this->bottom_vec_, this->top_vec_, bottom);
  }
}

TYPED_TEST(ContrastiveLossLayerTest, BadInputs) {
  this->FillCase();
  ContrastiveLossLayer<TypeParam> layer(
      ParseText<LayerParameter>("name: 'con' type: 'ContrastiveLoss'"));
  EXPECT_FALSE(layer.AllowForceBackward(2));
  layer.SetUp(this->bottom_vec_, this->top_vec_);
  layer.Forward(this->bottom_vec_, this->top_vec_);
  ExpectError(
      [&] {
        layer.Backward(this->top_vec_, {true, true, true}, this->bottom_vec_);
      },
      {"layer 'con' (ContrastiveLoss)"});
  this->b_.Reshape({2, 3, 1, 1});
  ContrastiveLossLayer<TypeParam> shape(
      ParseText<LayerParameter>("name: 'con' type: 'ContrastiveLoss'"));
  ExpectError([&] { shape.SetUp(this->bottom_vec_, this->top_vec_); },
              {"layer 'con'", "same shape"});
  this->b_.Reshape({2, 2, 1, 1});
  this->y_.Reshape({3, 1, 1, 1});
  ContrastiveLossLayer<TypeParam> labels(
      ParseText<LayerParameter>("name: 'con' type: 'ContrastiveLoss'"));
  ExpectError([&] { labels.SetUp(this->bottom_vec_, this->top_vec_); }, {"layer 'con'"});
}

}  // namespace doppio
