// Caffe's V0 and V1 net formats read and upgraded on load (util/upgrade_net.hpp): the
// upgraded nets equal what Caffe's own upgrade would write, build and run; the files the
// upgrade cannot take are refused naming the file, layer and field.
#include "doppio/util/upgrade_net.hpp"

#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include "doppio/core/net.hpp"
#include "doppio/util/io.hpp"
#include "log_capture.hpp"
#include "test_util.hpp"

namespace doppio {
namespace {

// models/lenet/train_val.prototxt as Caffe's examples wrote it in the V1 format.
const char* kV1LeNet = R"(
name: "LeNet"
layers {
  name: "mnist" type: DATA top: "data" top: "label"
  data_param { source: "data/mnist/mnist_train_lmdb" batch_size: 64 backend: LMDB }
  transform_param { scale: 0.00390625 }
  include: { phase: TRAIN }
}
layers {
  name: "mnist" type: DATA top: "data" top: "label"
  data_param { source: "data/mnist/mnist_test_lmdb" batch_size: 100 backend: LMDB }
  transform_param { scale: 0.00390625 }
  include: { phase: TEST }
}
layers {
  name: "conv1" type: CONVOLUTION bottom: "data" top: "conv1" blobs_lr: 1 blobs_lr: 2
  convolution_param { num_output: 20 kernel_size: 5 stride: 1
    weight_filler { type: "xavier" } bias_filler { type: "constant" } }
}
layers {
  name: "pool1" type: POOLING bottom: "conv1" top: "pool1"
  pooling_param { pool: MAX kernel_size: 2 stride: 2 }
}
layers {
  name: "conv2" type: CONVOLUTION bottom: "pool1" top: "conv2" blobs_lr: 1 blobs_lr: 2
  convolution_param { num_output: 50 kernel_size: 5 stride: 1
    weight_filler { type: "xavier" } bias_filler { type: "constant" } }
}
layers {
  name: "pool2" type: POOLING bottom: "conv2" top: "pool2"
  pooling_param { pool: MAX kernel_size: 2 stride: 2 }
}
layers {
  name: "ip1" type: INNER_PRODUCT bottom: "pool2" top: "ip1" blobs_lr: 1 blobs_lr: 2
  inner_product_param { num_output: 500
    weight_filler { type: "xavier" } bias_filler { type: "constant" } }
}
layers { name: "relu1" type: RELU bottom: "ip1" top: "ip1" }
layers {
  name: "ip2" type: INNER_PRODUCT bottom: "ip1" top: "ip2" blobs_lr: 1 blobs_lr: 2
  inner_product_param { num_output: 10
    weight_filler { type: "xavier" } bias_filler { type: "constant" } }
}
layers {
  name: "accuracy" type: ACCURACY bottom: "ip2" bottom: "label" top: "accuracy"
  include: { phase: TEST }
}
layers { name: "loss" type: SOFTMAX_LOSS bottom: "ip2" bottom: "label" top: "loss" }
)";

// Caffe's reference CaffeNet (deploy) in the V1 format: grouped convolutions, LRN after
// pooling, dropout, weight decay multipliers and net-level inputs.
const char* kV1CaffeNet = R"(
name: "CaffeNet"
input: "data"
input_dim: 1 input_dim: 3 input_dim: 227 input_dim: 227
layers { name: "conv1" type: CONVOLUTION bottom: "data" top: "conv1"
  blobs_lr: 1 blobs_lr: 2 weight_decay: 1 weight_decay: 0
  convolution_param { num_output: 96 kernel_size: 11 stride: 4 } }
layers { name: "relu1" type: RELU bottom: "conv1" top: "conv1" }
layers { name: "pool1" type: POOLING bottom: "conv1" top: "pool1"
  pooling_param { pool: MAX kernel_size: 3 stride: 2 } }
layers { name: "norm1" type: LRN bottom: "pool1" top: "norm1"
  lrn_param { local_size: 5 alpha: 0.0001 beta: 0.75 } }
layers { name: "conv2" type: CONVOLUTION bottom: "norm1" top: "conv2"
  blobs_lr: 1 blobs_lr: 2 weight_decay: 1 weight_decay: 0
  convolution_param { num_output: 256 pad: 2 kernel_size: 5 group: 2 } }
layers { name: "relu2" type: RELU bottom: "conv2" top: "conv2" }
layers { name: "pool2" type: POOLING bottom: "conv2" top: "pool2"
  pooling_param { pool: MAX kernel_size: 3 stride: 2 } }
layers { name: "norm2" type: LRN bottom: "pool2" top: "norm2"
  lrn_param { local_size: 5 alpha: 0.0001 beta: 0.75 } }
layers { name: "conv3" type: CONVOLUTION bottom: "norm2" top: "conv3"
  convolution_param { num_output: 384 pad: 1 kernel_size: 3 } }
layers { name: "relu3" type: RELU bottom: "conv3" top: "conv3" }
layers { name: "conv4" type: CONVOLUTION bottom: "conv3" top: "conv4"
  convolution_param { num_output: 384 pad: 1 kernel_size: 3 group: 2 } }
layers { name: "relu4" type: RELU bottom: "conv4" top: "conv4" }
layers { name: "conv5" type: CONVOLUTION bottom: "conv4" top: "conv5"
  convolution_param { num_output: 256 pad: 1 kernel_size: 3 group: 2 } }
layers { name: "relu5" type: RELU bottom: "conv5" top: "conv5" }
layers { name: "pool5" type: POOLING bottom: "conv5" top: "pool5"
  pooling_param { pool: MAX kernel_size: 3 stride: 2 } }
layers { name: "fc6" type: INNER_PRODUCT bottom: "pool5" top: "fc6"
  inner_product_param { num_output: 4096 } }
layers { name: "relu6" type: RELU bottom: "fc6" top: "fc6" }
layers { name: "drop6" type: DROPOUT bottom: "fc6" top: "fc6"
  dropout_param { dropout_ratio: 0.5 } }
layers { name: "fc7" type: INNER_PRODUCT bottom: "fc6" top: "fc7"
  inner_product_param { num_output: 4096 } }
layers { name: "relu7" type: RELU bottom: "fc7" top: "fc7" }
layers { name: "drop7" type: DROPOUT bottom: "fc7" top: "fc7"
  dropout_param { dropout_ratio: 0.5 } }
layers { name: "fc8" type: INNER_PRODUCT bottom: "fc7" top: "fc8"
  inner_product_param { num_output: 1000 } }
layers { name: "prob" type: SOFTMAX bottom: "fc8" top: "prob" }
)";

// A V0 net: layers inside connections, flat fields, and a separate padding layer.
const char* kV0Net = R"(
name: "v0"
layers {
  layer { name: "data" type: "data" source: "train_lmdb" batchsize: 8 scale: 0.5
          meanfile: "mean.binaryproto" cropsize: 24 mirror: true rand_skip: 3 }
  top: "data" top: "label"
}
layers { layer { name: "pad1" type: "padding" pad: 2 } bottom: "data" top: "pad1" }
layers {
  layer { name: "conv1" type: "conv" num_output: 4 kernelsize: 5 stride: 1 group: 1
          biasterm: false weight_filler { type: "gaussian" std: 0.01 }
          blobs_lr: 1 weight_decay: 0.5 }
  bottom: "pad1" top: "conv1"
}
layers { layer { name: "pool1" type: "pool" pool: AVE kernelsize: 3 stride: 2 }
         bottom: "conv1" top: "pool1" }
layers { layer { name: "norm1" type: "lrn" local_size: 3 alpha: 0.5 beta: 0.25 }
         bottom: "pool1" top: "norm1" }
layers { layer { name: "drop1" type: "dropout" dropout_ratio: 0.25 }
         bottom: "norm1" top: "norm1" }
layers { layer { name: "ip1" type: "innerproduct" num_output: 10 }
         bottom: "norm1" top: "ip1" }
layers { layer { name: "loss" type: "softmax_loss" } bottom: "ip1" bottom: "label" }
)";

void ExpectSameMessage(const google::protobuf::Message& actual,
                       const google::protobuf::Message& expected) {
  google::protobuf::util::MessageDifferencer differencer;
  std::string differences;
  differencer.ReportDifferencesToString(&differences);
  EXPECT_TRUE(differencer.Compare(actual, expected)) << differences;
}

TEST(UpgradeNet, V1LeNetBecomesTheShippedLeNet) {
  LogCapture info(google::INFO);
  const NetParameter upgraded = ReadNetParamsFromTextString(kV1LeNet, "v1_lenet.prototxt");
  ExpectSameMessage(upgraded,
                    ReadNetParamsFromTextFile(SourceDir() + "/models/lenet/train_val.prototxt"));
  EXPECT_CONTAINS(info.text(),
                  "v1_lenet.prototxt: upgraded from Caffe's V1 format (11 'layers' blocks) to 11 "
                  "'layer' blocks");
}

TEST(UpgradeNet, V1CaffeNetBuildsWithItsGroupsLrnAndMultipliers) {
  NetParameter param = ReadNetParamsFromTextString(kV1CaffeNet, "caffenet.prototxt");
  // The net-level input became the first layer.
  ASSERT_EQ(param.layer_size(), 24);
  EXPECT_EQ(param.input_size(), 0);
  EXPECT_EQ(param.layer(0).type(), "Input");
  const LayerParameter& conv2 = param.layer(5);
  EXPECT_EQ(conv2.type(), "Convolution");
  EXPECT_EQ(conv2.convolution_param().group(), 2u);
  ASSERT_EQ(conv2.param_size(), 2);
  EXPECT_EQ(conv2.param(0).lr_mult(), 1.f);
  EXPECT_EQ(conv2.param(1).lr_mult(), 2.f);
  EXPECT_EQ(conv2.param(0).decay_mult(), 1.f);
  EXPECT_EQ(conv2.param(1).decay_mult(), 0.f);
  EXPECT_EQ(param.layer(4).type(), "LRN");
  EXPECT_FLOAT_EQ(param.layer(4).lrn_param().alpha(), 0.0001f);
  EXPECT_EQ(param.layer(18).type(), "Dropout");
  EXPECT_EQ(param.layer(23).type(), "Softmax");

  param.mutable_state()->set_phase(TEST);
  Net<float> net(param);
  EXPECT_EQ(net.blob_by_name("conv2")->shape(), (std::vector<int>{1, 256, 27, 27}));
  EXPECT_EQ(net.layer_by_name("conv2")->blobs()[0]->shape(), (std::vector<int>{256, 48, 5, 5}));
  EXPECT_EQ(net.blob_by_name("prob")->shape(), (std::vector<int>{1, 1000}));
  float loss = 0;
  net.Forward(&loss);
}

TEST(UpgradeNet, V0NetFoldsPaddingAndMovesFlatFields) {
  NetParameter param;
  ReadProtoFromTextString(kV0Net, "v0.prototxt", &param);
  LogCapture info(google::INFO);
  EXPECT_TRUE(UpgradeNetAsNeeded("v0.prototxt", &param));
  EXPECT_CONTAINS(info.text(),
                  "upgraded from Caffe's V0 format (8 'layers' blocks) to 7 'layer' blocks");
  EXPECT_EQ(param.layers_size(), 0);
  const NetParameter expected = ParseText<NetParameter>(R"(
    name: "v0"
    layer { name: "data" type: "Data" top: "data" top: "label"
      transform_param { scale: 0.5 mean_file: "mean.binaryproto" crop_size: 24 mirror: true }
      data_param { source: "train_lmdb" batch_size: 8 rand_skip: 3 } }
    layer { name: "conv1" type: "Convolution" bottom: "data" top: "conv1"
      param { lr_mult: 1 decay_mult: 0.5 }
      convolution_param { num_output: 4 bias_term: false pad: 2 kernel_size: 5 group: 1
        stride: 1 weight_filler { type: "gaussian" std: 0.01 } } }
    layer { name: "pool1" type: "Pooling" bottom: "conv1" top: "pool1"
      pooling_param { pool: AVE kernel_size: 3 stride: 2 } }
    layer { name: "norm1" type: "LRN" bottom: "pool1" top: "norm1"
      lrn_param { local_size: 3 alpha: 0.5 beta: 0.25 } }
    layer { name: "drop1" type: "Dropout" bottom: "norm1" top: "norm1"
      dropout_param { dropout_ratio: 0.25 } }
    layer { name: "ip1" type: "InnerProduct" bottom: "norm1" top: "ip1"
      inner_product_param { num_output: 10 } }
    layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip1" bottom: "label" })");
  ExpectSameMessage(param, expected);
}

// Each old file under tests/util/data/upgrade/ next to what Caffe's upgrade_net_proto_text
// writes for it, written out by hand from Caffe's mapping.
TEST(UpgradeNet, OldFilesBecomeTheirHandWrittenExpectedFiles) {
  const std::string dir = SourceDir() + "/tests/util/data/upgrade/";
  for (const char* name : {"v0_data_layers", "v0_compute_layers", "v1_net_inputs",
                           "v1_data_transform", "net_input_shape"}) {
    SCOPED_TRACE(name);
    NetParameter param;
    ReadProtoFromTextFile(dir + name + ".prototxt", &param);
    EXPECT_TRUE(UpgradeNetAsNeeded(name, &param));
    NetParameter expected;
    ReadProtoFromTextFile(dir + name + ".expected.prototxt", &expected);
    ExpectSameMessage(param, expected);
  }
}

// Caffe lets the deprecated field win silently; a silent pick is a wrong answer, so it is refused.
TEST(UpgradeNet, RefusesTransformFieldsSetTwiceDifferently) {
  ExpectError(
      [] {
        ReadNetParamsFromTextString(R"(
          layers { name: "train" type: DATA top: "data"
                   data_param { source: "lmdb" batch_size: 1 crop_size: 24 }
                   transform_param { crop_size: 28 } })",
                                    "net.prototxt");
      },
      {"net.prototxt, layer 'train'",
       "data_param.crop_size (deprecated) and transform_param.crop_size disagree"});
  NetParameter same = ParseText<NetParameter>(R"(
    layers { name: "train" type: DATA top: "data"
             data_param { source: "lmdb" batch_size: 1 crop_size: 24 }
             transform_param { crop_size: 24 } })");
  ASSERT_TRUE(UpgradeNetAsNeeded("net.prototxt", &same));
  EXPECT_EQ(same.layer(0).transform_param().crop_size(), 24u);
  EXPECT_FALSE(same.layer(0).data_param().has_crop_size());
}

TEST(UpgradeNet, NetInputsBecomeAFirstInputLayerOnLoad) {
  LogCapture info(google::INFO);
  const NetParameter param = ReadNetParamsFromTextString(
      "input: 'a' input_dim: 2 input_dim: 3 input_dim: 1 input_dim: 1 "
      "layer { name: 'r' type: 'ReLU' bottom: 'a' top: 'b' }",
      "inputs.prototxt");
  EXPECT_CONTAINS(info.text(),
                  "inputs.prototxt: upgraded the net-level inputs (1) to a first 'Input' layer");
  EXPECT_EQ(param.input_size() + param.input_dim_size(), 0);
  ASSERT_EQ(param.layer_size(), 2);
  EXPECT_EQ(param.layer(0).name(), "input");
  EXPECT_EQ(param.layer(0).input_param().shape(0).dim_size(), 4);
  Net<float> net(param);
  EXPECT_EQ(net.blob_by_name("b")->shape(), (std::vector<int>{2, 3, 1, 1}));
}

// Old .caffemodel files carry the input names alone; Caffe drops them.
TEST(UpgradeNet, InputNamesWithoutShapesAreDropped) {
  NetParameter weights = ParseText<NetParameter>(
      "input: 'data' layer { name: 'ip' type: 'InnerProduct' blobs { data: 1 } }");
  EXPECT_TRUE(UpgradeNetAsNeeded("old.caffemodel", &weights));
  EXPECT_EQ(weights.input_size(), 0);
  ASSERT_EQ(weights.layer_size(), 1);
  EXPECT_EQ(weights.layer(0).name(), "ip");
}

TEST(UpgradeNet, CurrentNetIsLeftAlone) {
  NetParameter param = ParseText<NetParameter>(
      "layer { name: 'x' type: 'Input' top: 'x' input_param { shape { dim: 1 } } }");
  const NetParameter before = param;
  EXPECT_FALSE(UpgradeNetAsNeeded("current.prototxt", &param));
  ExpectSameMessage(param, before);
}

TEST(UpgradeNet, WeightsMoveWithTheirLayer) {
  NetParameter v1 = ParseText<NetParameter>(R"(
    layers { name: "ip" type: INNER_PRODUCT blobs { shape { dim: 2 } data: 1.5 data: -2 } })");
  UpgradeNetAsNeeded("v1.caffemodel", &v1);
  ASSERT_EQ(v1.layer_size(), 1);
  ASSERT_EQ(v1.layer(0).blobs_size(), 1);
  EXPECT_EQ(v1.layer(0).blobs(0).data(1), -2.f);

  NetParameter v0 = ParseText<NetParameter>(R"(
    layers { layer { name: "ip" type: "innerproduct" num_output: 1 blobs { data: 7 } } })");
  UpgradeNetAsNeeded("v0.caffemodel", &v0);
  ASSERT_EQ(v0.layer_size(), 1);
  ASSERT_EQ(v0.layer(0).blobs_size(), 1);
  EXPECT_EQ(v0.layer(0).blobs(0).data(0), 7.f);
}

TEST(UpgradeNet, RefusesWhatCaffeCannotUpgrade) {
  const auto upgrade = [](const std::string& text) {
    return [text] { ReadNetParamsFromTextString(text, "old.prototxt"); };
  };
  ExpectError(upgrade("layer { name: 'a' type: 'ReLU' } layers { name: 'b' type: RELU }"),
              {"old.prototxt", "mixes 'layer' blocks with Caffe's old 'layers' blocks"});
  ExpectError(upgrade("layers { name: 'b' bottom: 'x' top: 'y' }"),
              {"old.prototxt, layer 'b'", "has no type"});
  ExpectError(upgrade("layers { layer { name: 'c' type: 'convolution' } }"),
              {"old.prototxt, layer 'c'", "V0 layer type 'convolution'"});
  ExpectError(upgrade("layers { layer { name: 'c' type: 'conv' dropout_ratio: 0.5 } }"),
              {"old.prototxt, layer 'c'", "V0 field 'dropout_ratio'", "'conv' layer"});
  ExpectError(upgrade("layers { layer { name: 'p' type: 'padding' pad: 1 } bottom: 'x' top: 'p' }"
                      "layers { layer { name: 'r' type: 'relu' } bottom: 'p' top: 'r' }"),
              {"old.prototxt, layer 'r'", "padding layer 'p'", "conv or pool"});
  ExpectError(upgrade("layers { layer { name: 'r' type: 'relu' } }"
                      "layers { name: 's' type: RELU }"),
              {"old.prototxt", "mixes V0 layers"});
  ExpectError(upgrade("input: 'a' input_dim: 1 input_dim: 2"),
              {"old.prototxt", "input_dim needs 4 values per input, got 2 for 1 inputs"});
  ExpectError(upgrade("input: 'a' input: 'b' input_shape { dim: 1 }"),
              {"old.prototxt", "2 inputs but 1 input_shape entries"});
  ExpectError(upgrade("input: 'a' input_shape { dim: 1 } input_dim: 1"),
              {"old.prototxt", "give input_shape or input_dim, not both"});
}

TEST(UpgradeNet, SolverInlineNetsAreUpgraded) {
  TempDir dir;
  const std::string path = dir.path() + "/solver.prototxt";
  WriteFileAtomically(std::string("base_lr: 0.1 net_param { ") + kV1LeNet + " }", path);
  const SolverParameter solver = ReadSolverParamsFromTextFile(path);
  EXPECT_EQ(solver.net_param().layers_size(), 0);
  EXPECT_EQ(solver.net_param().layer_size(), 11);
  EXPECT_EQ(solver.net_param().layer(2).type(), "Convolution");
}

}  // namespace
}  // namespace doppio
