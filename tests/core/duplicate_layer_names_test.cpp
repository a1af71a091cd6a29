// Layers that share a name: accepted with a warning, as Caffe accepts them (its
// mnist_autoencoder has two layers named "loss"), and weights go by name as in Caffe.
#include <glog/logging.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "doppio/core/net.hpp"
#include "doppio/solvers/weights.hpp"
#include "doppio/util/io.hpp"
#include "test_util.hpp"

namespace doppio {
namespace {

// Two InnerProduct layers named "fc" of the same shape, and two parameterless layers named
// "loss" (as in Caffe's autoencoder: one trained loss, one only reported).
const char* kTwinNet = R"(
  name: "twins"
  state { phase: TRAIN }
  layer { name: "in" type: "Input" top: "x" top: "target"
          input_param { shape { dim: 2 dim: 4 } shape { dim: 2 dim: 4 } } }
  layer { name: "fc" type: "InnerProduct" bottom: "x" top: "h"
          inner_product_param { num_output: 4 weight_filler { type: "gaussian" std: 0.5 }
                                bias_filler { type: "constant" value: 0.1 } } }
  layer { name: "fc" type: "InnerProduct" bottom: "h" top: "y"
          inner_product_param { num_output: 4 weight_filler { type: "gaussian" std: 0.5 }
                                bias_filler { type: "constant" value: 0.2 } } }
  layer { name: "loss" type: "EuclideanLoss" bottom: "y" bottom: "target" top: "l2" }
  layer { name: "loss" type: "SigmoidCrossEntropyLoss" bottom: "y" bottom: "target"
          top: "xent" loss_weight: 0 }
)";

struct WarningSink : google::LogSink {
  std::vector<std::string> warnings;
  void send(google::LogSeverity severity, const char*, const char*, int,
            const google::LogMessageTime&, const char* message, size_t length) override {
    if (severity == google::WARNING) warnings.emplace_back(message, length);
  }
};

class DuplicateLayerNamesTest : public ::testing::Test {
 protected:
  static NetParameter Param() { return ReadNetParamsFromTextString(kTwinNet, "twins"); }

  // Indices of the layers named `name`, in net order.
  static std::vector<int> Named(const Net<float>& net, const std::string& name) {
    std::vector<int> ids;
    for (std::size_t i = 0; i < net.layer_names().size(); ++i) {
      if (net.layer_names()[i] == name) ids.push_back(static_cast<int>(i));
    }
    return ids;
  }

  static std::vector<float> Weights(const Net<float>& net, int layer_id) {
    const Blob<float>& blob = *net.layers()[layer_id]->blobs()[0];
    return std::vector<float>(blob.cpu_data(), blob.cpu_data() + blob.count());
  }

  // A weights file holding one layer named "fc" per entry of `values`, each weight set to it.
  static NetParameter FcWeights(const std::vector<float>& values) {
    NetParameter weights;
    for (float value : values) {
      LayerParameter* layer = weights.add_layer();
      layer->set_name("fc");
      BlobProto* weight = layer->add_blobs();
      weight->mutable_shape()->add_dim(4);
      weight->mutable_shape()->add_dim(4);
      for (int i = 0; i < 16; ++i) weight->add_data(value);
      BlobProto* bias = layer->add_blobs();
      bias->mutable_shape()->add_dim(4);
      for (int i = 0; i < 4; ++i) bias->add_data(value);
    }
    return weights;
  }
};

TEST_F(DuplicateLayerNamesTest, BuildsAndWarnsNamingBothLayersAndWhichGetsTheWeights) {
  WarningSink sink;
  google::AddLogSink(&sink);
  Net<float> net(Param());
  google::RemoveLogSink(&sink);

  const std::vector<int> fc = Named(net, "fc");
  const std::vector<int> loss = Named(net, "loss");
  ASSERT_EQ(fc.size(), 2u);
  ASSERT_EQ(loss.size(), 2u);
  float value = 0;
  net.Forward(&value);
  EXPECT_TRUE(std::isfinite(value));

  std::string fc_warning, loss_warning;
  for (const std::string& warning : sink.warnings) {
    if (warning.find("the name 'fc'") != std::string::npos) fc_warning = warning;
    if (warning.find("the name 'loss'") != std::string::npos) loss_warning = warning;
  }
  ASSERT_FALSE(fc_warning.empty()) << ::testing::PrintToString(sink.warnings);
  ASSERT_FALSE(loss_warning.empty()) << ::testing::PrintToString(sink.warnings);
  const std::string first_fc = "#" + std::to_string(fc[0]) + " (InnerProduct)";
  const std::string second_fc = "#" + std::to_string(fc[1]) + " (InnerProduct)";
  EXPECT_NE(fc_warning.find(first_fc), std::string::npos) << fc_warning;
  EXPECT_NE(fc_warning.find(second_fc), std::string::npos) << fc_warning;
  EXPECT_NE(fc_warning.find("go to the first, layer #" + std::to_string(fc[0])), std::string::npos)
      << fc_warning;
  EXPECT_NE(loss_warning.find("(EuclideanLoss)"), std::string::npos) << loss_warning;
  EXPECT_NE(loss_warning.find("(SigmoidCrossEntropyLoss)"), std::string::npos) << loss_warning;
}

TEST_F(DuplicateLayerNamesTest, LayerByNameFindsTheLastAndLabelsTellThemApart) {
  Net<float> net(Param());
  const std::vector<int> fc = Named(net, "fc");
  ASSERT_EQ(fc.size(), 2u);
  EXPECT_TRUE(net.has_layer("fc"));
  EXPECT_EQ(net.layer_by_name("fc"), net.layers()[fc[1]]);
  EXPECT_EQ(net.layer_label(fc[0]), "fc#" + std::to_string(fc[0]));
  EXPECT_EQ(net.layer_label(fc[1]), "fc#" + std::to_string(fc[1]));
  EXPECT_EQ(net.layer_label(0), "in");
}

TEST_F(DuplicateLayerNamesTest, CopiedWeightsGoToTheFirstLayerOfTheName) {
  Net<float> net(Param());
  const std::vector<int> fc = Named(net, "fc");
  const std::vector<float> second_before = Weights(net, fc[1]);

  net.CopyTrainedLayersFrom(FcWeights({3.f}));
  EXPECT_EQ(Weights(net, fc[0]), std::vector<float>(16, 3.f));
  EXPECT_EQ(Weights(net, fc[1]), second_before);

  // Two source layers of the name both write the first target; the last one stays.
  net.CopyTrainedLayersFrom(FcWeights({5.f, 7.f}));
  EXPECT_EQ(Weights(net, fc[0]), std::vector<float>(16, 7.f));
  EXPECT_EQ(Weights(net, fc[1]), second_before);
}

TEST_F(DuplicateLayerNamesTest, LoadNetWeightsWarnsThatTheSecondKeepsItsWeights) {
  TempDir dir;
  const std::string file = dir.path() + "/fc.caffemodel";
  WriteProtoToBinaryFile(FcWeights({2.f}), file);
  Net<float> net(Param());
  const std::vector<int> fc = Named(net, "fc");
  WarningSink sink;
  google::AddLogSink(&sink);
  LoadNetWeights(&net, file);
  google::RemoveLogSink(&sink);
  EXPECT_EQ(Weights(net, fc[0]), std::vector<float>(16, 2.f));
  bool warned = false;
  for (const std::string& warning : sink.warnings) {
    warned |= warning.find("Layer #" + std::to_string(fc[1]) + " 'fc' (InnerProduct)") !=
                  std::string::npos &&
              warning.find("keeps its initial weights") != std::string::npos;
  }
  EXPECT_TRUE(warned) << ::testing::PrintToString(sink.warnings);
}

TEST_F(DuplicateLayerNamesTest, SharingGoesToTheFirstLayerOfTheName) {
  Net<float> source(Param(), 11);
  Net<float> target(Param(), 12);
  const std::vector<int> fc = Named(target, "fc");
  target.ShareTrainedLayersWith(source);
  // Both of the source's "fc" layers share into the target's first; the second one wins.
  EXPECT_EQ(target.layers()[fc[0]]->blobs()[0]->cpu_data(),
            source.layers()[fc[1]]->blobs()[0]->cpu_data());
  EXPECT_NE(target.layers()[fc[1]]->blobs()[0]->cpu_data(),
            source.layers()[fc[0]]->blobs()[0]->cpu_data());
  EXPECT_NE(target.layers()[fc[1]]->blobs()[0]->cpu_data(),
            source.layers()[fc[1]]->blobs()[0]->cpu_data());
}

TEST_F(DuplicateLayerNamesTest, ASnapshotRestoresEachLayerOfTheName) {
  Net<float> trained(Param(), 21);
  NetParameter snapshot;
  trained.ToProto(&snapshot);
  Net<float> resumed(Param(), 22);
  const std::vector<int> fc = Named(resumed, "fc");
  ASSERT_NE(Weights(trained, fc[1]), Weights(resumed, fc[1]));
  EXPECT_NO_THROW(CheckWeightsMatchNet(resumed, snapshot, "snapshot"));
  resumed.RestoreTrainedLayersFrom(snapshot);
  EXPECT_EQ(Weights(resumed, fc[0]), Weights(trained, fc[0]));
  EXPECT_EQ(Weights(resumed, fc[1]), Weights(trained, fc[1]));
}

TEST_F(DuplicateLayerNamesTest, ASnapshotWithTooFewLayersOfTheNameIsFromAnotherNet) {
  Net<float> net(Param());
  const std::string second = "fc#" + std::to_string(Named(net, "fc")[1]);
  ExpectError([&] { CheckWeightsMatchNet(net, FcWeights({1.f}), "one.caffemodel"); },
              {"one.caffemodel", "no layer '" + second + "'"});
}

}  // namespace
}  // namespace doppio
