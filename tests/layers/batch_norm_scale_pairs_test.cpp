// Which BatchNorm + Scale pairs a batch normalization call with gamma and beta may compute
// (layers/batch_norm_scale_pairs.hpp, the cuDNN fusion pass's graph rules), on CPU nets: the
// rules read only the graph and the layers' parameters.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "doppio/core/net.hpp"
#include "doppio/layers/batch_norm_scale_pairs.hpp"
#include "test_util.hpp"

namespace doppio {
namespace {

// data -> conv -> bn -> `between` -> sc -> loss, where the BatchNorm writes `bn_top` and the
// Scale reads `scale_bottom` (in place when it writes the same blob).
struct Chain {
  std::string bn_top = "conv";
  std::string bn_param;
  std::string scale_top = "conv";
  std::string scale_param = "bias_term: true";
  std::string scale_extra_bottom;
  std::string between;  // layers between the BatchNorm and the Scale
};

std::unique_ptr<Net<float>> MakeNet(const Chain& c, Phase phase = TRAIN) {
  const std::string text = R"(
    name: 'pairs'
    layer { name: 'data' type: 'Input' top: 'data' top: 'label' top: 'factor'
            input_param { shape { dim: 2 dim: 3 dim: 4 dim: 4 } shape { dim: 2 }
                          shape { dim: 4 } } }
    layer { name: 'conv' type: 'Convolution' bottom: 'data' top: 'conv'
            convolution_param { num_output: 4 kernel_size: 1 weight_filler { type: 'gaussian' } } }
    layer { name: 'bn' type: 'BatchNorm' bottom: 'conv' top: ')" +
                           c.bn_top + "' " + c.bn_param + " }\n" + c.between + R"(
    layer { name: 'sc' type: 'Scale' bottom: ')" +
                           c.bn_top + "' " + c.scale_extra_bottom + " top: '" + c.scale_top +
                           "' scale_param { " + c.scale_param + R"( } }
    layer { name: 'pool' type: 'Pooling' bottom: ')" +
                           c.scale_top + R"(' top: 'pool'
            pooling_param { pool: AVE global_pooling: true } }
    layer { name: 'ip' type: 'InnerProduct' bottom: 'pool' top: 'ip'
            inner_product_param { num_output: 2 weight_filler { type: 'gaussian' } } }
    layer { name: 'loss' type: 'SoftmaxWithLoss' bottom: 'ip' bottom: 'label' top: 'loss' }
    layer { name: 'silence' type: 'Silence' bottom: 'factor' }
  )";
  NetParameter param = ParseText<NetParameter>(text);
  param.mutable_state()->set_phase(phase);
  return std::make_unique<Net<float>>(param);
}

std::vector<std::pair<std::string, std::string>> Pairs(const Net<float>& net) {
  std::vector<std::pair<std::string, std::string>> names;
  for (const auto& [i, k] : BatchNormScalePairs(net)) {
    names.emplace_back(net.layer_names()[i], net.layer_names()[k]);
  }
  return names;
}

using Names = std::vector<std::pair<std::string, std::string>>;

TEST(BatchNormScalePairsTest, InPlaceChainWithBatchStatisticsPairs) {
  EXPECT_EQ(Pairs(*MakeNet(Chain())), (Names{{"bn", "sc"}}));
  Chain no_bias;
  no_bias.scale_param = "bias_term: false";
  EXPECT_EQ(Pairs(*MakeNet(no_bias)), (Names{{"bn", "sc"}}));
  // The BatchNorm need not run in place: the Scale in place on its top is what counts.
  Chain bn_apart;
  bn_apart.bn_top = "bn";
  bn_apart.scale_top = "bn";
  EXPECT_EQ(Pairs(*MakeNet(bn_apart)), (Names{{"bn", "sc"}}));
}

TEST(BatchNormScalePairsTest, StoredStatisticsDoNotPair) {
  Chain global;
  global.bn_param = "batch_norm_param { use_global_stats: true }";
  EXPECT_TRUE(Pairs(*MakeNet(global)).empty());
  // TEST normalizes with the stored statistics by default.
  EXPECT_TRUE(Pairs(*MakeNet(Chain(), TEST)).empty());
}

TEST(BatchNormScalePairsTest, ScaleNotInPlaceDoesNotPair) {
  Chain apart;
  apart.scale_top = "sc";
  EXPECT_TRUE(Pairs(*MakeNet(apart)).empty());
}

TEST(BatchNormScalePairsTest, ScaleOtherThanOneFactorPerChannelDoesNotPair) {
  Chain whole;
  whole.scale_param = "axis: 1 num_axes: 3";
  EXPECT_TRUE(Pairs(*MakeNet(whole)).empty());
  Chain from_bottom;  // the factor comes from a second bottom, not a learned blob
  from_bottom.scale_top = "sc";
  from_bottom.scale_extra_bottom = "bottom: 'factor'";
  EXPECT_TRUE(Pairs(*MakeNet(from_bottom)).empty());
}

TEST(BatchNormScalePairsTest, AnotherLayerBetweenDoesNotPair) {
  Chain relu_first;
  relu_first.between = "layer { name: 'relu' type: 'ReLU' bottom: 'conv' top: 'conv' }";
  EXPECT_TRUE(Pairs(*MakeNet(relu_first)).empty());
}

}  // namespace
}  // namespace doppio
