#include "doppio/layers/dropout_layer.hpp"

#include <gtest/gtest.h>

#include <string>

#include "gradient_checker.hpp"
#include "neuron_test_helpers.hpp"
#include "test_util.hpp"

namespace doppio {

template <typename Dtype>
class DropoutLayerTest : public ::testing::Test {
 protected:
  static LayerParameter Param(const std::string& phase, double ratio, bool scale_train) {
    LayerParameter param = ParseText<LayerParameter>("name: 'd' type: 'Dropout' phase: " + phase);
    param.mutable_dropout_param()->set_dropout_ratio(static_cast<float>(ratio));
    param.mutable_dropout_param()->set_scale_train(scale_train);
    return param;
  }

  // Forward in TRAIN on a large blob: every unit is either dropped (0) or kept and scaled by
  // `kept_scale`, the mask says which, and the kept fraction is near 1 - ratio.
  void CheckTrainStatistics(double ratio, bool scale_train, double kept_scale) {
    DropoutLayer<Dtype> layer(Param("TRAIN", ratio, scale_train));
    Rng rng(111);
    Blob<Dtype> bottom({10, 100, 100}), top;
    FillUniform<Dtype>(&bottom, rng, Dtype(1), Dtype(2));
    layer.SetUp({&bottom}, {&top});
    layer.set_seed(5);
    layer.Forward({&bottom}, {&top});
    const int count = bottom.count();
    ASSERT_EQ(static_cast<int>(layer.mask().size()), count);
    int kept = 0;
    for (int i = 0; i < count; ++i) {
      const Dtype x = bottom.cpu_data()[i];
      const Dtype y = top.cpu_data()[i];
      if (layer.mask()[i]) {
        ++kept;
        ASSERT_NEAR(y, x * kept_scale, 1e-6 * y);
      } else {
        ASSERT_EQ(y, 0);
      }
    }
    // 100000 draws: the standard deviation of the fraction is below 0.0016.
    EXPECT_NEAR(static_cast<double>(kept) / count, 1 - ratio, 0.01);
    // Backward uses the same mask and scale.
    cpu_set(count, Dtype(3), top.mutable_cpu_diff());
    layer.Backward({&top}, {true}, {&bottom});
    for (int i = 0; i < count; ++i) {
      ASSERT_NEAR(bottom.cpu_diff()[i], layer.mask()[i] ? 3 * kept_scale : 0, 1e-5);
    }
  }

  // Forward and backward in TEST multiply by `scale`.
  void CheckTest(double ratio, bool scale_train, double scale) {
    DropoutLayer<Dtype> layer(Param("TEST", ratio, scale_train));
    Blob<Dtype> bottom({3}), top;
    SetValues(&bottom, {1, -2, 4});
    layer.SetUp({&bottom}, {&top});
    layer.Forward({&bottom}, {&top});
    ExpectValues(top, {scale, -2 * scale, 4 * scale});
    SetDiffs(&top, {1, 2, 3});
    layer.Backward({&top}, {true}, {&bottom});
    ExpectValues(bottom, {scale, 2 * scale, 3 * scale}, true);
  }
};
TYPED_TEST_SUITE(DropoutLayerTest, TestDtypes);

TYPED_TEST(DropoutLayerTest, TrainScaled) { this->CheckTrainStatistics(0.5, true, 2.0); }
TYPED_TEST(DropoutLayerTest, TrainScaledOtherRatio) {
  this->CheckTrainStatistics(0.3, true, 1 / 0.7);
}
TYPED_TEST(DropoutLayerTest, TrainUnscaled) { this->CheckTrainStatistics(0.3, false, 1.0); }
TYPED_TEST(DropoutLayerTest, TrainRatioZeroKeepsAll) { this->CheckTrainStatistics(0.0, true, 1.0); }

TYPED_TEST(DropoutLayerTest, TestIsIdentityWithScaleTrain) { this->CheckTest(0.5, true, 1.0); }
TYPED_TEST(DropoutLayerTest, TestScalesWithoutScaleTrain) { this->CheckTest(0.25, false, 0.75); }

TYPED_TEST(DropoutLayerTest, DefaultsAreHalfAndScaled) {
  using Dtype = TypeParam;
  DropoutLayer<Dtype> layer(ParseText<LayerParameter>("name: 'd' type: 'Dropout' phase: TRAIN"));
  Blob<Dtype> bottom({1000}), top;
  cpu_set(bottom.count(), Dtype(1), bottom.mutable_cpu_data());
  layer.SetUp({&bottom}, {&top});
  layer.Forward({&bottom}, {&top});
  for (int i = 0; i < bottom.count(); ++i) {
    ASSERT_TRUE(top.cpu_data()[i] == 0 || top.cpu_data()[i] == 2) << top.cpu_data()[i];
  }
}

// A sample's mask is a function of (seed, the sample's stream position): the data-parallel
// equivalence and exact resume rest on it.
TYPED_TEST(DropoutLayerTest, MaskIsAFunctionOfSeedAndSamplePosition) {
  using Dtype = TypeParam;
  const int num = 4, units = 50;
  Blob<Dtype> bottom({num, units}), half({num / 2, units}), top, half_top;
  cpu_set(bottom.count(), Dtype(1), bottom.mutable_cpu_data());
  cpu_set(half.count(), Dtype(1), half.mutable_cpu_data());
  DropoutLayer<Dtype> whole(this->Param("TRAIN", 0.5, true));
  whole.SetUp({&bottom}, {&top});
  whole.set_seed(7);
  // Without a reading layer the layer numbers its own samples: 0..3, then 4..7.
  whole.Forward({&bottom}, {&top});
  const std::vector<unsigned int> first = whole.mask();
  whole.Forward({&bottom}, {&top});
  EXPECT_NE(first, whole.mask()) << "consecutive batches drew the same masks";

  // A second rank's half batch placed at position 2 draws the masks of samples 2 and 3.
  DropoutLayer<Dtype> second_rank(this->Param("TRAIN", 0.5, true));
  second_rank.SetUp({&half}, {&half_top});
  second_rank.set_seed(7);
  second_rank.batch_position().Set(2);
  second_rank.Forward({&half}, {&half_top});
  EXPECT_TRUE(
      std::equal(second_rank.mask().begin(), second_rank.mask().end(), first.begin() + 2 * units));

  // Another seed: other masks.
  second_rank.set_seed(8);
  second_rank.Forward({&half}, {&half_top});
  EXPECT_FALSE(
      std::equal(second_rank.mask().begin(), second_rank.mask().end(), first.begin() + 2 * units));
}

TYPED_TEST(DropoutLayerTest, BadRatioNamesLayerAndField) {
  using Dtype = TypeParam;
  for (double ratio : {1.0, 1.5, -0.1}) {
    DropoutLayer<Dtype> layer(this->Param("TRAIN", ratio, true));
    Blob<Dtype> bottom({4}), top;
    const std::string message = ErrorMessageOf([&] { layer.SetUp({&bottom}, {&top}); });
    EXPECT_CONTAINS(message, "layer 'd' (Dropout)");
    EXPECT_CONTAINS(message, "dropout_ratio");
  }
}

TYPED_TEST(DropoutLayerTest, GradientTrain) {
  using Dtype = TypeParam;
  for (bool scale_train : {true, false}) {
    SCOPED_TRACE(scale_train);
    DropoutLayer<Dtype> layer(this->Param("TRAIN", 0.4, scale_train));
    Rng rng(121);
    Blob<Dtype> bottom({2, 3, 4, 5}), top;
    FillGaussian<Dtype>(&bottom, rng);
    GradientChecker<Dtype> checker(1e-2, 1e-3, 1701);
    checker.CheckGradientEltwise(&layer, {&bottom}, {&top});
  }
}

TYPED_TEST(DropoutLayerTest, GradientTest) {
  using Dtype = TypeParam;
  for (bool scale_train : {true, false}) {
    SCOPED_TRACE(scale_train);
    DropoutLayer<Dtype> layer(this->Param("TEST", 0.4, scale_train));
    Rng rng(122);
    Blob<Dtype> bottom({2, 3, 4}), top;
    FillGaussian<Dtype>(&bottom, rng);
    GradientChecker<Dtype> checker(1e-2, 1e-3);
    checker.CheckGradientEltwise(&layer, {&bottom}, {&top});
  }
}

TYPED_TEST(DropoutLayerTest, InPlace) {
  for (const char* phase : {"TRAIN", "TEST"}) {
    for (bool scale_train : {true, false}) {
      SCOPED_TRACE(std::string(phase) + (scale_train ? " scaled" : " unscaled"));
      ExpectInPlaceMatches<TypeParam>(this->Param(phase, 0.4, scale_train), {2, 3, 4}, -1, 1);
    }
  }
}

}  // namespace doppio
