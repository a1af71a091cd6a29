#include "doppio/layers/loss_layer.hpp"

#include <gtest/gtest.h>

#include "doppio/core/layer_registry.hpp"
#include "test_util.hpp"

namespace doppio {

template <typename Dtype>
class LossLayerTest : public ::testing::Test {};
TYPED_TEST_SUITE(LossLayerTest, TestDtypes);

TYPED_TEST(LossLayerTest, NormalizerForEveryMode) {
  using L = LossLayer<TypeParam>;
  EXPECT_EQ(L::GetNormalizer(LossParameter::FULL, 2, 3, 4), TypeParam(6));
  EXPECT_EQ(L::GetNormalizer(LossParameter::VALID, 2, 3, 4), TypeParam(4));
  EXPECT_EQ(L::GetNormalizer(LossParameter::VALID, 2, 3, -1), TypeParam(6));
  EXPECT_EQ(L::GetNormalizer(LossParameter::BATCH_SIZE, 2, 3, 4), TypeParam(2));
  EXPECT_EQ(L::GetNormalizer(LossParameter::NONE, 2, 3, 4), TypeParam(1));
  // Never below 1: an all-ignored batch or an empty one gives a finite loss.
  EXPECT_EQ(L::GetNormalizer(LossParameter::VALID, 2, 3, 0), TypeParam(1));
  EXPECT_EQ(L::GetNormalizer(LossParameter::BATCH_SIZE, 0, 3, 0), TypeParam(1));
  EXPECT_EQ(L::GetNormalizer(LossParameter::FULL, 0, 0, 0), TypeParam(1));
}

TYPED_TEST(LossLayerTest, LegacyNormalizeApliesOnlyWithoutNormalization) {
  using L = LossLayer<TypeParam>;
  EXPECT_EQ(L::ResolveNormalization(ParseText<LossParameter>("")), LossParameter::VALID);
  EXPECT_EQ(L::ResolveNormalization(ParseText<LossParameter>(""), LossParameter::BATCH_SIZE),
            LossParameter::BATCH_SIZE);
  EXPECT_EQ(L::ResolveNormalization(ParseText<LossParameter>("normalize: true")),
            LossParameter::VALID);
  EXPECT_EQ(L::ResolveNormalization(ParseText<LossParameter>("normalize: false")),
            LossParameter::BATCH_SIZE);
  EXPECT_EQ(
      L::ResolveNormalization(ParseText<LossParameter>("normalize: false"), LossParameter::FULL),
      LossParameter::BATCH_SIZE);
  EXPECT_EQ(
      L::ResolveNormalization(ParseText<LossParameter>("normalize: false normalization: FULL")),
      LossParameter::FULL);
  EXPECT_EQ(L::ResolveNormalization(ParseText<LossParameter>("normalization: NONE")),
            LossParameter::NONE);
}

TYPED_TEST(LossLayerTest, LayersAreRegisteredUnderTheirTypes) {
  for (const char* type :
       {"Softmax", "SoftmaxWithLoss", "Accuracy", "EuclideanLoss", "SigmoidCrossEntropyLoss",
        "HingeLoss", "InfogainLoss", "ContrastiveLoss", "BatchNorm", "Scale", "Bias"}) {
    SCOPED_TRACE(type);
    LayerParameter param;
    param.set_name("x");
    param.set_type(type);
    auto layer = LayerRegistry<TypeParam>::CreateLayer(param);
    ASSERT_NE(layer, nullptr);
    EXPECT_STREQ(layer->type(), type);
    const bool is_loss = std::string(type).find("Loss") != std::string::npos;
    EXPECT_EQ(layer->IsLossLayer(), is_loss);
  }
}

}  // namespace doppio
