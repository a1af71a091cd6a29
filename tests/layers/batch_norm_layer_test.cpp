#include "doppio/layers/batch_norm_layer.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "gradient_checker.hpp"
#include "test_util.hpp"

namespace doppio {

template <typename Dtype>
class BatchNormLayerTest : public ::testing::Test {
 protected:
  void Set(const std::vector<int>& shape, const std::vector<Dtype>& values) {
    x_.Reshape(shape);
    std::copy(values.begin(), values.end(), x_.mutable_cpu_data());
  }

  Blob<Dtype> x_;
  Blob<Dtype> y_;
  std::vector<Blob<Dtype>*> bottom_vec_{&x_};
  std::vector<Blob<Dtype>*> top_vec_{&y_};
  Rng rng_{77};
};
TYPED_TEST_SUITE(BatchNormLayerTest, TestDtypes);

TYPED_TEST(BatchNormLayerTest, TwoByTwoAndRunningStatistics) {
  // N = 2, C = 2. Channel 0 sees (1, 3): mean 2, variance 1. Channel 1 sees (2, 6): mean 4,
  // variance 4.
  this->Set({2, 2}, {1, 2, 3, 6});
  BatchNormLayer<TypeParam> layer(
      ParseText<LayerParameter>("name: 'bn' type: 'BatchNorm' phase: TRAIN "
                                "batch_norm_param { moving_average_fraction: 0.5 eps: 1e-5 }"));
  layer.SetUp(this->bottom_vec_, this->top_vec_);
  ASSERT_EQ(layer.blobs().size(), 3u);
  EXPECT_EQ(layer.blobs()[0]->shape(), std::vector<int>{2});
  EXPECT_EQ(layer.blobs()[1]->shape(), std::vector<int>{2});
  EXPECT_EQ(layer.blobs()[2]->shape(), std::vector<int>{1});
  layer.Forward(this->bottom_vec_, this->top_vec_);
  const double s0 = 1 / std::sqrt(1 + 1e-5), s1 = 1 / std::sqrt(4 + 1e-5);
  const double expected[] = {-1 * s0, -2 * s1, 1 * s0, 2 * s1};
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(this->y_.cpu_data()[i], expected[i], 1e-5);
  // After one pass: factor 1, mean sums (2, 4), variance sums with m / (m - 1) = 2: (2, 8).
  EXPECT_NEAR(layer.blobs()[2]->cpu_data()[0], 1, 1e-6);
  EXPECT_NEAR(layer.blobs()[0]->cpu_data()[0], 2, 1e-6);
  EXPECT_NEAR(layer.blobs()[0]->cpu_data()[1], 4, 1e-6);
  EXPECT_NEAR(layer.blobs()[1]->cpu_data()[0], 2, 1e-6);
  EXPECT_NEAR(layer.blobs()[1]->cpu_data()[1], 8, 1e-6);
  // Second pass: both channels see (0, 2): mean 1, variance 1.
  this->Set({2, 2}, {0, 0, 2, 2});
  layer.Forward(this->bottom_vec_, this->top_vec_);
  // factor 0.5 * 1 + 1 = 1.5; mean sums 0.5 * (2, 4) + 1 = (2, 3); variance sums
  // 0.5 * (2, 8) + 2 * 1 = (3, 6).
  EXPECT_NEAR(layer.blobs()[2]->cpu_data()[0], 1.5, 1e-6);
  EXPECT_NEAR(layer.blobs()[0]->cpu_data()[0], 2, 1e-6);
  EXPECT_NEAR(layer.blobs()[0]->cpu_data()[1], 3, 1e-6);
  EXPECT_NEAR(layer.blobs()[1]->cpu_data()[0], 3, 1e-6);
  EXPECT_NEAR(layer.blobs()[1]->cpu_data()[1], 6, 1e-6);

  // A TEST-phase layer with these blobs uses mean (2, 3) / 1.5 = (4/3, 2) and variance
  // (3, 6) / 1.5 = (2, 4), and leaves the blobs alone.
  LayerParameter test_param = ParseText<LayerParameter>(
      "name: 'bn' type: 'BatchNorm' phase: TEST batch_norm_param { eps: 1e-5 }");
  for (auto& blob : layer.blobs()) blob->ToProto(test_param.add_blobs());
  BatchNormLayer<TypeParam> test_layer(test_param);
  this->Set({1, 2}, {10.0 / 3, 4});
  test_layer.SetUp(this->bottom_vec_, this->top_vec_);
  test_layer.Forward(this->bottom_vec_, this->top_vec_);
  EXPECT_NEAR(this->y_.cpu_data()[0], 2 / std::sqrt(2 + 1e-5), 1e-5);
  EXPECT_NEAR(this->y_.cpu_data()[1], 2 / std::sqrt(4 + 1e-5), 1e-5);
  EXPECT_NEAR(test_layer.blobs()[2]->cpu_data()[0], 1.5, 1e-6);
  EXPECT_NEAR(test_layer.blobs()[0]->cpu_data()[1], 3, 1e-6);
  // Backward with global statistics: dx = dy / sqrt(var + eps).
  this->y_.mutable_cpu_diff()[0] = 1;
  this->y_.mutable_cpu_diff()[1] = 3;
  test_layer.Backward(this->top_vec_, {true}, this->bottom_vec_);
  EXPECT_NEAR(this->x_.cpu_diff()[0], 1 / std::sqrt(2 + 1e-5), 1e-5);
  EXPECT_NEAR(this->x_.cpu_diff()[1], 3 / std::sqrt(4 + 1e-5), 1e-5);
}

TYPED_TEST(BatchNormLayerTest, SpatialStatisticsAndPhaseDefaults) {
  // {2, 1, 2}: channel 0 sees 1, 2, 3, 4 over batch and space: mean 2.5, variance 1.25.
  this->Set({2, 1, 2}, {1, 2, 3, 4});
  BatchNormLayer<TypeParam> train(
      ParseText<LayerParameter>("name: 'bn' type: 'BatchNorm' phase: TRAIN"));
  train.SetUp(this->bottom_vec_, this->top_vec_);
  train.Forward(this->bottom_vec_, this->top_vec_);
  const double inv = 1 / std::sqrt(1.25 + 1e-5);
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(this->y_.cpu_data()[i], (i + 1 - 2.5) * inv, 1e-5);
  // Unbiased: 1.25 * 4 / 3.
  EXPECT_NEAR(train.blobs()[1]->cpu_data()[0], 1.25 * 4 / 3, 1e-5);
  // TEST defaults to the stored statistics; fresh ones are zero (factor 0): y = x / sqrt(eps).
  BatchNormLayer<TypeParam> test(ParseText<LayerParameter>(
      "name: 'bn' type: 'BatchNorm' phase: TEST batch_norm_param { eps: 0.25 }"));
  test.SetUp(this->bottom_vec_, this->top_vec_);
  test.Forward(this->bottom_vec_, this->top_vec_);
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(this->y_.cpu_data()[i], (i + 1) / 0.5, 1e-5);
  EXPECT_EQ(test.blobs()[2]->cpu_data()[0], TypeParam(0));
  // use_global_stats overrides the phase.
  BatchNormLayer<TypeParam> test_batch(ParseText<LayerParameter>(
      "name: 'bn' type: 'BatchNorm' phase: TEST batch_norm_param { use_global_stats: false }"));
  test_batch.SetUp(this->bottom_vec_, this->top_vec_);
  test_batch.Forward(this->bottom_vec_, this->top_vec_);
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(this->y_.cpu_data()[i], (i + 1 - 2.5) * inv, 1e-5);
}

TYPED_TEST(BatchNormLayerTest, StatisticsAreNotLearned) {
  this->Set({2, 3}, {1, 2, 3, 4, 5, 6});
  BatchNormLayer<TypeParam> layer(ParseText<LayerParameter>(
      "name: 'bn' type: 'BatchNorm' phase: TRAIN param { lr_mult: 0 decay_mult: 0 }"));
  layer.SetUp(this->bottom_vec_, this->top_vec_);
  ASSERT_EQ(layer.layer_param().param_size(), 3);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(layer.layer_param().param(i).lr_mult(), 0.f);
    EXPECT_FALSE(layer.param_propagate_down(i));
  }
  EXPECT_EQ(layer.layer_param().param(0).decay_mult(), 0.f);  // the given spec is kept
  for (auto& blob : layer.blobs()) cpu_set(blob->count(), TypeParam(7), blob->mutable_cpu_diff());
  layer.Forward(this->bottom_vec_, this->top_vec_);
  FillGaussian<TypeParam>(&this->y_, this->rng_);
  cpu_copy(6, this->y_.cpu_data(), this->y_.mutable_cpu_diff());
  layer.Backward(this->top_vec_, {true}, this->bottom_vec_);
  for (auto& blob : layer.blobs()) {
    for (int i = 0; i < blob->count(); ++i) EXPECT_EQ(blob->cpu_diff()[i], TypeParam(7));
  }
  BatchNormLayer<TypeParam> learned(ParseText<LayerParameter>(
      "name: 'bn2' type: 'BatchNorm' param { lr_mult: 0 } param { lr_mult: 1 }"));
  ExpectError([&] { learned.SetUp(this->bottom_vec_, this->top_vec_); },
              {"layer 'bn2' (BatchNorm)", "param[1].lr_mult"});
}

TYPED_TEST(BatchNormLayerTest, BadInputs) {
  this->Set({2, 3}, {1, 2, 3, 4, 5, 6});
  BatchNormLayer<TypeParam> layer(ParseText<LayerParameter>("name: 'bn3' type: 'BatchNorm'"));
  layer.SetUp(this->bottom_vec_, this->top_vec_);
  this->x_.Reshape({2, 4});
  ExpectError([&] { layer.Forward(this->bottom_vec_, this->top_vec_); },
              {"layer 'bn3'", "channel"});
  LayerParameter stored = ParseText<LayerParameter>("name: 'bn3' type: 'BatchNorm'");
  Blob<TypeParam> wrong({5});
  for (int i = 0; i < 3; ++i) wrong.ToProto(stored.add_blobs());
  BatchNormLayer<TypeParam> from_model(stored);
  ExpectError([&] { from_model.SetUp(this->bottom_vec_, this->top_vec_); }, {"layer 'bn3'"});
}

TYPED_TEST(BatchNormLayerTest, GradientBatchStatistics) {
  for (const std::vector<int>& shape :
       {std::vector<int>{3, 2, 2, 2}, std::vector<int>{4, 3}, std::vector<int>{2, 2, 3}}) {
    this->x_.Reshape(shape);
    FillGaussian<TypeParam>(&this->x_, this->rng_, 0.5, 2);
    BatchNormLayer<TypeParam> layer(
        ParseText<LayerParameter>("name: 'bn' type: 'BatchNorm' phase: TRAIN"));
    // The statistics blobs are "checked" too: they neither receive nor (in this mode)
    // influence anything, so both gradients are zero.
    GradientChecker<TypeParam> checker(1e-2, 1e-3);
    checker.CheckGradientExhaustive(&layer, this->bottom_vec_, this->top_vec_);
  }
}

TYPED_TEST(BatchNormLayerTest, GradientGlobalStatistics) {
  // The checker also perturbs the stored statistics, which do influence the output here but
  // take no gradient by design; so the bottom is checked by central differences directly.
  this->x_.Reshape({2, 3, 2});
  FillGaussian<TypeParam>(&this->x_, this->rng_, 0, 1);
  LayerParameter param = ParseText<LayerParameter>(
      "name: 'bn' type: 'BatchNorm' batch_norm_param { use_global_stats: true }");
  Blob<TypeParam> mean({3}), var({3}), factor({1});
  FillGaussian<TypeParam>(&mean, this->rng_);
  FillUniform<TypeParam>(&var, this->rng_, 0.5, 2);
  factor.mutable_cpu_data()[0] = 1.7;
  mean.ToProto(param.add_blobs());
  var.ToProto(param.add_blobs());
  factor.ToProto(param.add_blobs());
  BatchNormLayer<TypeParam> layer(param);
  layer.SetUp(this->bottom_vec_, this->top_vec_);
  Blob<TypeParam> weights({2, 3, 2});
  FillGaussian<TypeParam>(&weights, this->rng_);
  auto objective = [&] {
    layer.Forward(this->bottom_vec_, this->top_vec_);
    return cpu_dot(12, this->y_.cpu_data(), weights.cpu_data());
  };
  objective();
  cpu_copy(12, weights.cpu_data(), this->y_.mutable_cpu_diff());
  layer.Backward(this->top_vec_, {true}, this->bottom_vec_);
  const TypeParam step = 1e-2;
  for (int i = 0; i < 12; ++i) {
    const TypeParam v = this->x_.cpu_data()[i];
    this->x_.mutable_cpu_data()[i] = v + step;
    const TypeParam plus = objective();
    this->x_.mutable_cpu_data()[i] = v - step;
    const TypeParam minus = objective();
    this->x_.mutable_cpu_data()[i] = v;
    EXPECT_NEAR(this->x_.cpu_diff()[i], (plus - minus) / (2 * step), 1e-3);
  }
  // The stored statistics are untouched by Forward in this mode.
  EXPECT_NEAR(layer.blobs()[2]->cpu_data()[0], 1.7, 1e-6);
}

TYPED_TEST(BatchNormLayerTest, InPlaceMatchesOutOfPlace) {
  for (bool global : {false, true}) {
    SCOPED_TRACE(global);
    const std::string text = std::string(
                                 "name: 'bn' type: 'BatchNorm' batch_norm_param { "
                                 "use_global_stats: ") +
                             (global ? "true" : "false") + " }";
    this->x_.Reshape({3, 2, 2});
    FillGaussian<TypeParam>(&this->x_, this->rng_, 1, 2);
    Blob<TypeParam> inplace;
    inplace.CopyFrom(this->x_, false, true);
    std::vector<Blob<TypeParam>*> io{&inplace};
    BatchNormLayer<TypeParam> a(ParseText<LayerParameter>(text));
    BatchNormLayer<TypeParam> b(ParseText<LayerParameter>(text));
    a.SetUp(this->bottom_vec_, this->top_vec_);
    b.SetUp(io, io);
    if (global) {
      for (int k = 0; k < 3; ++k) {
        FillUniform<TypeParam>(a.blobs()[k].get(), this->rng_, 0.5, 1.5);
        b.blobs()[k]->CopyFrom(*a.blobs()[k]);
      }
    }
    a.Forward(this->bottom_vec_, this->top_vec_);
    b.Forward(io, io);
    for (int i = 0; i < 12; ++i) EXPECT_NEAR(inplace.cpu_data()[i], this->y_.cpu_data()[i], 1e-6);
    rng_gaussian<TypeParam>(12, 0, 1, this->rng_, this->y_.mutable_cpu_diff());
    cpu_copy(12, this->y_.cpu_diff(), inplace.mutable_cpu_diff());
    a.Backward(this->top_vec_, {true}, this->bottom_vec_);
    b.Backward(io, {true}, io);
    for (int i = 0; i < 12; ++i) EXPECT_NEAR(inplace.cpu_diff()[i], this->x_.cpu_diff()[i], 1e-5);
  }
}

}  // namespace doppio
