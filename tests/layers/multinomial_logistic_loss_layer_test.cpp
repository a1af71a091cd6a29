#include "doppio/layers/multinomial_logistic_loss_layer.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "doppio/core/layer_registry.hpp"
#include "gradient_checker.hpp"
#include "test_util.hpp"

namespace doppio {

template <typename Dtype>
class MultinomialLogisticLossLayerTest : public ::testing::Test {
 protected:
  LayerParameter param_ = ParseText<LayerParameter>("name: 'loss' type: 'MultinomialLogisticLoss'");
};
TYPED_TEST_SUITE(MultinomialLogisticLossLayerTest, TestDtypes);

TYPED_TEST(MultinomialLogisticLossLayerTest, ForwardBackwardHandComputed) {
  using Dtype = TypeParam;
  MultinomialLogisticLossLayer<Dtype> layer(this->param_);
  Blob<Dtype> prob({3, 2, 1, 1}), labels({3, 1, 1, 1}), loss;
  // The last item's label has probability 0: the log is taken of 1e-20 instead.
  SetValues(&prob, {0.25, 0.75, 0.5, 0.5, 1, 0});
  SetValues(&labels, {1, 0, 1});
  layer.SetUp({&prob, &labels}, {&loss});
  EXPECT_EQ(loss.num_axes(), 0);
  const Dtype value = layer.Forward({&prob, &labels}, {&loss});
  const double expected = -(std::log(0.75) + std::log(0.5) + std::log(1e-20)) / 3;
  EXPECT_NEAR(value, expected, 1e-5 * expected);
  EXPECT_NEAR(loss.cpu_data()[0], expected, 1e-5 * expected);
  loss.mutable_cpu_diff()[0] = 2;  // a loss weight of 2
  layer.Backward({&loss}, {true, false}, {&prob, &labels});
  // -2 / (3 p) at each label, 0 elsewhere.
  ExpectValues(prob, {0, -2 / 2.25, -2 / 1.5, 0, 0, -2 / 3e-20}, true);
}

TYPED_TEST(MultinomialLogisticLossLayerTest, Gradient) {
  using Dtype = TypeParam;
  MultinomialLogisticLossLayer<Dtype> layer(this->param_);
  Rng rng(8);
  Blob<Dtype> prob({5, 4}), labels({5}), loss;
  FillUniform<Dtype>(&prob, rng, Dtype(0.2), Dtype(1));
  SetValues(&labels, {3, 0, 1, 3, 2});
  GradientChecker<Dtype> checker(1e-3, 2e-3);
  checker.CheckGradientExhaustive(&layer, {&prob, &labels}, {&loss}, 0);
}

TEST(MultinomialLogisticLossLayerErrorTest, BadLabelsAndFieldsNameTheLayer) {
  Blob<float> prob({2, 3}), labels({2}), loss;
  const auto make = [](const std::string& extra) {
    return LayerRegistry<float>::CreateLayer(
        ParseText<LayerParameter>("name: 'loss' type: 'MultinomialLogisticLoss' " + extra));
  };
  auto layer = make("");
  SetValues(&labels, {0, 3});
  layer->SetUp({&prob, &labels}, {&loss});
  ExpectError(
      [&] {
        layer->Forward({&prob, &labels}, {&loss});
      },
      {"layer 'loss' (MultinomialLogisticLoss)", "label value 3", "label index 1", "[0, 3)"});
  ExpectError(
      [&] {
        make("loss_param { ignore_label: 1 }")->SetUp({&prob, &labels}, {&loss});
      },
      {"layer 'loss' (MultinomialLogisticLoss)", "loss_param.ignore_label"});
  ExpectError(
      [&] {
        make("loss_param { normalization: VALID }")->SetUp({&prob, &labels}, {&loss});
      },
      {"layer 'loss' (MultinomialLogisticLoss)", "loss_param.normalization"});
  make("loss_param { normalize: false }")->SetUp({&prob, &labels}, {&loss});  // BATCH_SIZE
  Blob<float> two_labels_each({2, 2});
  ExpectError(
      [&] {
        make("")->SetUp({&prob, &two_labels_each}, {&loss});
      },
      {"layer 'loss' (MultinomialLogisticLoss)", "one label per item"});
}

}  // namespace doppio
