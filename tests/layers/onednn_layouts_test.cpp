// Blocked oneDNN layouts kept between oneDNN layers (OnednnTensor, OnednnLayout): whole nets
// shaped like LeNet, CIFAR10-quick, AlexNet's first block, a GoogLeNet inception block and a ResNet
// bottleneck block, with channel counts that are multiples of 16 so that oneDNN's blocked layouts
// fit in the blobs' buffers, compute with blocked layouts kept what they compute with every layer
// reading and writing Caffe's layout: the outputs, the loss, every parameter gradient and the
// input's gradient. The layouts really are kept (an intermediate blob holds one until it is
// read), and a reader outside oneDNN gets Caffe's layout.
#ifdef DOPPIO_WITH_ONEDNN

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "doppio/core/net.hpp"
#include "doppio/layers/onednn_batch_norm_layer.hpp"
#include "doppio/layers/onednn_eltwise_layer.hpp"
#include "doppio/layers/onednn_relu_layer.hpp"
#include "doppio/layers/onednn_tensor.hpp"
#include "doppio/util/host_workspace.hpp"
#include "engine_comparison.hpp"
#include "test_util.hpp"

namespace doppio {
namespace {

const char* kInput = R"(
  force_backward: true
  layer { name: 'data' type: 'Input' top: 'data' top: 'label'
          input_param { shape { dim: 2 dim: %C% dim: %HW% dim: %HW% } shape { dim: 2 } } }
)";

std::string Conv(const std::string& name, const std::string& bottom, int out, int kernel,
                 int pad = 0, int stride = 1, const std::string& top = "") {
  return "layer { name: '" + name + "' type: 'Convolution' bottom: '" + bottom + "' top: '" +
         (top.empty() ? name : top) + "' convolution_param { num_output: " + std::to_string(out) +
         " kernel_size: " + std::to_string(kernel) + " pad: " + std::to_string(pad) +
         " stride: " + std::to_string(stride) +
         " weight_filler { type: 'gaussian' std: 0.1 } bias_filler { type: 'gaussian' std: 0.1 "
         "} } }\n";
}

std::string Layer(const std::string& name, const std::string& type, const std::string& bottom,
                  const std::string& top, const std::string& params = "") {
  return "layer { name: '" + name + "' type: '" + type + "' bottom: '" + bottom + "' top: '" + top +
         "' " + params + " }\n";
}

std::string Pool(const std::string& name, const std::string& bottom, const std::string& pool,
                 int kernel, int stride, int pad = 0) {
  return Layer(name, "Pooling", bottom, name,
               "pooling_param { pool: " + pool + " kernel_size: " + std::to_string(kernel) +
                   " stride: " + std::to_string(stride) + " pad: " + std::to_string(pad) + " }");
}

std::string Head(const std::string& bottom, int hidden) {
  std::string text;
  if (hidden > 0) {
    text += Layer("ip1", "InnerProduct", bottom, "ip1",
                  "inner_product_param { num_output: " + std::to_string(hidden) +
                      " weight_filler { type: 'gaussian' std: 0.1 } }");
    text += Layer("relu_ip1", "ReLU", "ip1", "ip1");
  }
  text += Layer("ip2", "InnerProduct", hidden > 0 ? "ip1" : bottom, "ip2",
                "inner_product_param { num_output: 5 weight_filler { type: 'gaussian' std: 0.1 "
                "} }");
  text +=
      "layer { name: 'loss' type: 'SoftmaxWithLoss' bottom: 'ip2' bottom: 'label' top: "
      "'loss' }\n";
  return text;
}

std::string Input(int channels, int size) {
  std::string text = kInput;
  text.replace(text.find("%C%"), 3, std::to_string(channels));
  text.replace(text.find("%HW%"), 4, std::to_string(size));
  text.replace(text.find("%HW%"), 4, std::to_string(size));
  return text;
}

std::string LeNet() {
  return Input(1, 20) + Conv("conv1", "data", 16, 5) + Pool("pool1", "conv1", "MAX", 2, 2) +
         Conv("conv2", "pool1", 32, 5) + Pool("pool2", "conv2", "MAX", 2, 2) + Head("pool2", 32);
}

std::string Cifar10Quick() {
  return Input(3, 16) + Conv("conv1", "data", 32, 5, 2) + Pool("pool1", "conv1", "MAX", 3, 2) +
         Layer("relu1", "ReLU", "pool1", "pool1") + Conv("conv2", "pool1", 32, 5, 2) +
         Layer("relu2", "ReLU", "conv2", "conv2") + Pool("pool2", "conv2", "AVE", 3, 2) +
         Conv("conv3", "pool2", 64, 5, 2) + Layer("relu3", "ReLU", "conv3", "conv3") +
         Pool("pool3", "conv3", "AVE", 3, 2) + Head("pool3", 16);
}

// A stem, then one inception block (four branches concatenated), a pool and the head.
std::string Inception() {
  return Input(3, 12) + Conv("stem", "data", 32, 3, 1) +
         Layer("stem_relu", "ReLU", "stem", "stem") +
         Layer("norm", "LRN", "stem", "norm", "lrn_param { local_size: 5 }") +
         Conv("b1", "norm", 16, 1) + Layer("b1_relu", "ReLU", "b1", "b1") +
         Conv("b3_reduce", "norm", 16, 1) + Layer("b3r_relu", "ReLU", "b3_reduce", "b3_reduce") +
         Conv("b3", "b3_reduce", 32, 3, 1) + Layer("b3_relu", "ReLU", "b3", "b3") +
         Conv("b5_reduce", "norm", 16, 1) + Layer("b5r_relu", "ReLU", "b5_reduce", "b5_reduce") +
         Conv("b5", "b5_reduce", 16, 5, 2) + Layer("b5_relu", "ReLU", "b5", "b5") +
         Pool("bp_pool", "norm", "MAX", 3, 1, 1) + Conv("bp", "bp_pool", 16, 1) +
         Layer("bp_relu", "ReLU", "bp", "bp") +
         "layer { name: 'concat' type: 'Concat' bottom: 'b1' bottom: 'b3' bottom: 'b5' "
         "bottom: 'bp' top: 'concat' }\n" +
         Pool("pool", "concat", "AVE", 3, 2) + Head("pool", 0);
}

// AlexNet's first block: the LRN (the default engine's, oneDNN) reads the convolution's blocked
// output and leaves its own blocked for the pooling.
std::string AlexNetStem() {
  return Input(3, 15) + Conv("conv1", "data", 32, 5, 0, 2) +
         Layer("relu1", "ReLU", "conv1", "conv1") +
         Layer("norm1", "LRN", "conv1", "norm1",
               "lrn_param { local_size: 5 alpha: 0.0001 beta: 0.75 }") +
         Pool("pool1", "norm1", "MAX", 3, 2) + Head("pool1", 16);
}

std::string BnScaleRelu(const std::string& name, bool relu) {
  std::string text = Layer(name + "_bn", "BatchNorm", name, name) +
                     Layer(name + "_scale", "Scale", name, name, "scale_param { bias_term: true }");
  if (relu) text += Layer(name + "_relu", "ReLU", name, name);
  return text;
}

// A ResNet-50 bottleneck `name` on `bottom`: 1x1, 3x3 (of `stride`), 1x1 convolutions, each
// with BatchNorm + Scale, added to the shortcut, a projection (a strided 1x1 convolution with
// BatchNorm + Scale) or the bottom itself, then a ReLU. `sum_params` go to the Eltwise.
std::string Bottleneck(const std::string& name, const std::string& bottom, int stride,
                       bool projection, const std::string& sum_params = "") {
  const std::string shortcut = projection ? name + "_branch1" : bottom;
  std::string text;
  if (projection) text += Conv(shortcut, bottom, 64, 1, 0, stride) + BnScaleRelu(shortcut, false);
  text += Conv(name + "_2a", bottom, 16, 1) + BnScaleRelu(name + "_2a", true);
  text += Conv(name + "_2b", name + "_2a", 16, 3, 1, stride) + BnScaleRelu(name + "_2b", true);
  text += Conv(name + "_2c", name + "_2b", 64, 1) + BnScaleRelu(name + "_2c", false);
  text += "layer { name: '" + name + "' type: 'Eltwise' bottom: '" + shortcut + "' bottom: '" +
          name + "_2c' top: '" + name + "' " + sum_params + " }\n";
  return text + Layer(name + "_relu", "ReLU", name, name);
}

std::string Stem() {
  return Input(3, 10) + Conv("stem", "data", 32, 3, 1) + BnScaleRelu("stem", true);
}

// Two bottlenecks with projection shortcuts, the second strided.
std::string ResNetBlock() {
  return Stem() + Bottleneck("a", "stem", 1, true) + Bottleneck("b", "a", 2, true) +
         Pool("pool", "b", "AVE", 5, 1) + Head("pool", 0);
}

// A stage's start: a projection shortcut, then an identity one (the Split of a's output read
// by the Eltwise itself).
std::string ResNetStage(const std::string& sum_params = "") {
  return Stem() + Bottleneck("a", "stem", 1, true, sum_params) +
         Bottleneck("b", "a", 1, false, sum_params) + Pool("pool", "b", "AVE", 5, 1) +
         Head("pool", 0);
}

std::unique_ptr<Net<float>> MakeNet(const std::string& text) {
  NetParameter param = ParseText<NetParameter>(text);
  param.mutable_state()->set_phase(TRAIN);
  return std::make_unique<Net<float>>(param);
}

// Restores the default (blocked layouts kept) when a test ends, whatever it set.
class OnednnLayoutsTest : public ::testing::Test {
 protected:
  void TearDown() override { SetOnednnKeepsBlockedLayouts(true); }
};

void Pass(Net<float>& net, bool blocked, float* loss) {
  SetOnednnKeepsBlockedLayouts(blocked);
  net.Forward(loss);
  net.Backward();
  SetOnednnKeepsBlockedLayouts(true);
}

// How many blobs of `net` hold a oneDNN layout in their data or their diff now.
int BlockedBlobs(const Net<float>& net) {
  int blocked = 0;
  for (const auto& blob : net.blobs()) {
    blocked += OnednnLayoutOf(*blob->data()) != nullptr;
    blocked += OnednnLayoutOf(*blob->diff()) != nullptr;
  }
  return blocked;
}

// Gives `to` the data input and the parameters of `from`.
void CopyDataAndParams(const Net<float>& from, Net<float>& to) {
  to.blob_by_name("data")->CopyFrom(*from.blob_by_name("data"));
  ASSERT_EQ(from.learnable_params().size(), to.learnable_params().size());
  for (std::size_t p = 0; p < from.learnable_params().size(); ++p) {
    to.learnable_params()[p]->CopyFrom(*from.learnable_params()[p]);
  }
}

// A TRAIN net of `text` after one forward and backward pass, layouts kept, on Gaussian data.
std::unique_ptr<Net<float>> AfterOnePass(const std::string& text, std::uint64_t seed) {
  auto net = MakeNet(text);
  Rng rng(seed);
  FillGaussian(net->blob_by_name("data").get(), rng);
  float loss = 0;
  Pass(*net, true, &loss);
  return net;
}

// Two TRAIN nets of `text` and `other` with the same Gaussian input (from `seed`), labels and
// parameters.
std::pair<std::unique_ptr<Net<float>>, std::unique_ptr<Net<float>>> TwinNets(
    const std::string& text, const std::string& other, std::uint64_t seed = 17) {
  auto first = MakeNet(text);
  auto second = MakeNet(other);
  Rng rng(seed);
  FillGaussian(first->blob_by_name("data").get(), rng);
  Blob<float>& label = *first->blob_by_name("label");
  for (int i = 0; i < label.count(); ++i) label.mutable_cpu_data()[i] = static_cast<float>(i % 5);
  CopyDataAndParams(*first, *second);
  second->blob_by_name("label")->CopyFrom(label);
  return {std::move(first), std::move(second)};
}

// Every parameter gradient of `got` against `want`'s, at the scale of the net's largest
// gradient: the bias gradient of a Scale that feeds a BatchNorm sums to zero in exact
// arithmetic (the BatchNorm's bottom diff has zero mean per channel), and came out as
// rounding noise of 1e-7 in one twin and -3e-7 in the other, on an AMD EPYC without AVX-512.
void ExpectSameGradients(const Net<float>& got, const Net<float>& want, double tolerance,
                         const std::string& when) {
  double gradient_scale = 0;
  for (const Blob<float>* param : want.learnable_params()) {
    gradient_scale = std::max(gradient_scale, RootMeanSquare(param->cpu_diff(), param->count()));
  }
  for (std::size_t p = 0; p < want.learnable_params().size(); ++p) {
    const Blob<float>& expected = *want.learnable_params()[p];
    ExpectClose(got.learnable_params()[p]->cpu_diff(), expected.cpu_diff(), expected.count(),
                tolerance, when + "gradient of learnable blob " + std::to_string(p),
                gradient_scale);
  }
}

// Two nets of `text` with the same inputs and parameters (TwinNets), one of them keeping
// oneDNN's blocked layouts: runs both forward and backward twice (parameter gradients
// accumulate; the second time after reading every blob, which turns them to Caffe's layout
// between Forward and Backward), and compares the results.
// `kept` names a blob whose data must hold a oneDNN layout after the first pass (in the ResNet
// block, a BatchNorm + Scale fused into one primitive's output).
void ExpectSameResults(const std::string& text, const std::string& kept) {
  const auto [plain, blocked] = TwinNets(text, text, 11);
  const double tolerance = 1e-5;
  for (int pass = 1; pass <= 2; ++pass) {
    const std::string when = "pass " + std::to_string(pass) + ": ";
    float loss[2];
    if (pass == 1) {
      Pass(*plain, false, &loss[0]);
      Pass(*blocked, true, &loss[1]);
      // Blocked layouts were kept (else the comparison proves nothing).
      EXPECT_EQ(BlockedBlobs(*plain), 0);
      if (!kept.empty()) {
        EXPECT_GT(BlockedBlobs(*blocked), 2);
        EXPECT_NE(OnednnLayoutOf(*blocked->blob_by_name(kept)->data()), nullptr) << kept;
      }
    } else {
      SetOnednnKeepsBlockedLayouts(false);
      plain->Forward(&loss[0]);
      SetOnednnKeepsBlockedLayouts(true);
      blocked->Forward(&loss[1]);
      for (const std::string& name : plain->blob_names()) {
        const Blob<float>& want = *plain->blob_by_name(name);
        ExpectClose(blocked->blob_by_name(name)->cpu_data(), want.cpu_data(), want.count(),
                    tolerance, when + name);
      }
      plain->Backward();
      blocked->Backward();
    }
    EXPECT_NEAR(loss[0], loss[1], tolerance * std::fabs(loss[0])) << when;
    ExpectSameGradients(*blocked, *plain, tolerance, when);
    ExpectClose(blocked->blob_by_name("data")->cpu_diff(), plain->blob_by_name("data")->cpu_diff(),
                plain->blob_by_name("data")->count(), tolerance, when + "data diff");
  }
}

TEST_F(OnednnLayoutsTest, LeNetKeepsResults) { ExpectSameResults(LeNet(), "conv2"); }

TEST_F(OnednnLayoutsTest, Cifar10QuickKeepsResults) { ExpectSameResults(Cifar10Quick(), "conv3"); }

TEST_F(OnednnLayoutsTest, InceptionBlockKeepsResults) { ExpectSameResults(Inception(), "concat"); }

TEST_F(OnednnLayoutsTest, AlexNetStemKeepsResults) { ExpectSameResults(AlexNetStem(), "norm1"); }

TEST_F(OnednnLayoutsTest, WorkspaceHoldsOnlyTheCopiesACallUses) {
  // AlexNet's first block without force_backward: nothing reads the input's diff, which in
  // oneDNN's layout for 3 channels (padded to 16) would be the largest copy of the pass.
  std::string text = AlexNetStem();
  text.erase(text.find("force_backward: true"), std::string("force_backward: true").size());
  const std::size_t padded_input_diff = sizeof(float) * 2 * 16 * 15 * 15;
  // On a thread of its own: its HostWorkspace holds what this net's calls asked for, not
  // what other tests left.
  std::size_t workspace = 0;
  std::thread([&] {
    auto net = MakeNet(text);
    Rng rng(5);
    FillGaussian(net->blob_by_name("data").get(), rng);
    float loss = 0;
    Pass(*net, true, &loss);
    workspace = HostWorkspaceBytes();
  }).join();
  EXPECT_GT(workspace, 0u);
  EXPECT_LT(workspace, padded_input_diff);
}

TEST_F(OnednnLayoutsTest, ResNetBlockKeepsResults) { ExpectSameResults(ResNetBlock(), "a_2c"); }

TEST_F(OnednnLayoutsTest, BatchNormKeepsTheConvolutionsLayout) {
  const auto net = AfterOnePass(ResNetBlock(), 4);
  // A 4-d BatchNorm + Scale reads its convolution's output in the layout (and dims) the
  // convolution left, and leaves its own output so for the next convolution: a (N, C, H*W, 1)
  // layout would have been converted to Caffe's and back around it.
  for (const char* name : {"a_2c", "a_branch1", "b_2c"}) {
    const Blob<float>& blob = *net->blob_by_name(name);
    const OnednnLayout* held = OnednnLayoutOf(*blob.data());
    ASSERT_NE(held, nullptr) << name;
    const dnnl::memory::dims dims = held->desc().dims();
    EXPECT_EQ(std::vector<int>(dims.begin(), dims.end()), blob.shape()) << name;
  }
}

// One convolution's output read by two: the Split between them sums their diffs, both in the
// convolutions' blocked layout, in that layout.
std::string Fork() {
  return Input(16, 8) + Conv("c", "data", 16, 3, 1) + Conv("l", "c", 16, 1) +
         Conv("r", "c", 16, 3, 1) +
         "layer { name: 'sum' type: 'Eltwise' bottom: 'l' bottom: 'r' top: 'sum' }\n" +
         Pool("pool", "sum", "AVE", 4, 4) + Head("pool", 0);
}

TEST_F(OnednnLayoutsTest, ForkKeepsResults) { ExpectSameResults(Fork(), "sum"); }

TEST_F(OnednnLayoutsTest, SplitSumsBlockedDiffsInTheirLayout) {
  const auto net = AfterOnePass(Fork(), 6);
  // Convolution c only reads its top diff, which the Split wrote.
  EXPECT_NE(OnednnLayoutOf(*net->blob_by_name("c")->diff()), nullptr);
  // With blocked layouts off, the Split sums in Caffe's layout (the CAFFE kernel): the same.
  const auto plain = MakeNet(Fork());
  CopyDataAndParams(*net, *plain);
  float loss = 0;
  Pass(*plain, false, &loss);
  const Blob<float>& want = *plain->blob_by_name("c");
  ExpectClose(net->blob_by_name("c")->cpu_diff(), want.cpu_diff(), want.count(), 1e-5, "c diff");
}

TEST_F(OnednnLayoutsTest, BlockedLayoutsStayBetweenOnednnLayers) {
  const auto net = AfterOnePass(Cifar10Quick(), 3);
  // conv1 -> pool1 -> relu1 -> conv2 -> ... -> pool3: every one of these outputs and their
  // diffs is written by a oneDNN layer and read only by oneDNN layers.
  const SyncedMemory& conv2 = *net->blob_by_name("conv2")->data();
  ASSERT_NE(OnednnLayoutOf(conv2), nullptr);
  EXPECT_NE(OnednnLayoutOf(*net->blob_by_name("pool1")->data()), nullptr);
  EXPECT_NE(OnednnLayoutOf(*net->blob_by_name("conv2")->diff()), nullptr);
  EXPECT_GE(BlockedBlobs(*net), 8);
  // The input and the parameters (views of the arena) stay in Caffe's layout.
  EXPECT_EQ(OnednnLayoutOf(*net->blob_by_name("data")->data()), nullptr);
  for (const auto* param : net->learnable_params()) {
    EXPECT_EQ(param->data()->cpu_layout(), nullptr);
    EXPECT_EQ(param->diff()->cpu_layout(), nullptr);
  }
  // A reader gets Caffe's layout, and the blob keeps it until a oneDNN layer writes it again.
  const std::uint64_t writes = conv2.write_count();
  net->blob_by_name("conv2")->cpu_data();
  EXPECT_EQ(OnednnLayoutOf(conv2), nullptr);
  EXPECT_EQ(conv2.write_count(), writes);

  const auto plain = MakeNet(Cifar10Quick());
  CopyDataAndParams(*net, *plain);
  float loss = 0;
  Pass(*plain, false, &loss);
  EXPECT_EQ(BlockedBlobs(*plain), 0);
}

TEST_F(OnednnLayoutsTest, SharedTestActivationsStayInCaffeLayout) {
  // A TEST net's activations that are not alive at once share buffers through views, which
  // hold no layout: the oneDNN layers write them in Caffe's layout.
  NetParameter param = ParseText<NetParameter>(Cifar10Quick());
  param.mutable_state()->set_phase(TEST);
  Net<float> plain(param), blocked(param);
  Rng rng(13);
  FillGaussian(plain.blob_by_name("data").get(), rng);
  CopyDataAndParams(plain, blocked);
  SetOnednnKeepsBlockedLayouts(false);
  plain.Forward();
  SetOnednnKeepsBlockedLayouts(true);
  blocked.Forward();
  const Blob<float>& want = *plain.blob_by_name("ip2");
  ExpectClose(blocked.blob_by_name("ip2")->cpu_data(), want.cpu_data(), want.count(), 1e-5, "ip2");
}

TEST_F(OnednnLayoutsTest, CaffeLayerReadsCaffeLayout) {
  // conv1's output in oneDNN's layout, read by a CAFFE-engine layer (Power has no other
  // engine), then checked against the output read directly.
  const std::string text =
      Input(3, 8) + Conv("conv1", "data", 16, 3, 1) +
      Layer("power", "Power", "conv1", "power", "power_param { scale: 2 shift: 1 }");
  auto net = MakeNet(text);
  Rng rng(5);
  FillGaussian(net->blob_by_name("data").get(), rng);
  net->ForwardFromTo(0, 1);
  const Blob<float>& conv = *net->blob_by_name("conv1");
  ASSERT_NE(OnednnLayoutOf(*conv.data()), nullptr);
  net->ForwardFromTo(2, 2);
  const Blob<float>& power = *net->blob_by_name("power");
  // The Power layer's read turned conv1's blob to Caffe's layout: the blob, as Caffe lays it
  // out, is what Power saw.
  EXPECT_EQ(OnednnLayoutOf(*conv.data()), nullptr);
  std::vector<float> want(conv.count());
  for (int i = 0; i < conv.count(); ++i) want[i] = 2 * conv.cpu_data()[i] + 1;
  ExpectClose(power.cpu_data(), want.data(), conv.count(), 1e-6, "power");

  // The same convolution computed by the CAFFE engine, in Caffe's layout.
  NetParameter param = ParseText<NetParameter>(text);
  param.mutable_layer(1)->mutable_convolution_param()->set_engine(ConvolutionParameter::CAFFE);
  param.mutable_state()->set_phase(TRAIN);
  Net<float> caffe(param);
  caffe.blob_by_name("data")->CopyFrom(*net->blob_by_name("data"));
  for (std::size_t p = 0; p < caffe.learnable_params().size(); ++p) {
    caffe.learnable_params()[p]->CopyFrom(*net->learnable_params()[p]);
  }
  caffe.Forward();
  ExpectClose(conv.cpu_data(), caffe.blob_by_name("conv1")->cpu_data(), conv.count(), 1e-5,
              "conv1");
}

// Every blob's data and diff and every parameter gradient of `got` against `want`'s, to 1e-5
// like the engine comparisons above: the twins sum the same terms in another order (a fused
// post-op against a separate pass), and on an AMD EPYC without AVX-512 that moved data diffs
// by up to 1.7e-6 of their scale.
void ExpectSameBlobs(const Net<float>& got, const Net<float>& want, const std::string& when) {
  const double tolerance = 1e-5;
  for (const std::string& name : want.blob_names()) {
    const Blob<float>& expected = *want.blob_by_name(name);
    const Blob<float>& actual = *got.blob_by_name(name);
    ExpectClose(actual.cpu_data(), expected.cpu_data(), expected.count(), tolerance, when + name);
    ExpectClose(actual.cpu_diff(), expected.cpu_diff(), expected.count(), tolerance,
                when + name + " diff");
  }
  ExpectSameGradients(got, want, tolerance, when);
}

int LayerIndex(const Net<float>& net, const std::string& name) {
  const auto& names = net.layer_names();
  return static_cast<int>(std::find(names.begin(), names.end(), name) - names.begin());
}

TEST_F(OnednnLayoutsTest, ShortcutSumsGiveTheirBottomsTheTopDiffWithoutCopies) {
  // The CAFFE Eltwise copies its top's diff to each bottom; the oneDNN one does not where the
  // reader can read the top's: a's identity Split top shares b's diff, and the BatchNorms of
  // a_branch1, a_2c and b_2c read their Eltwise's top diff. The oneDNN one also computes the
  // ReLU after it (binary add with a post-op).
  auto [lent, copied] = TwinNets(ResNetStage(), ResNetStage("eltwise_param { engine: CAFFE }"));
  const int sum = LayerIndex(*lent, "b");
  Blob<float>* identity = lent->bottom_vecs()[sum][0];
  const int last = static_cast<int>(lent->layers().size()) - 1;
  const auto& eltwise = dynamic_cast<const OnednnEltwiseLayer&>(*lent->layers()[sum]);
  EXPECT_TRUE(dynamic_cast<const OnednnReLULayer&>(*lent->layer_by_name("b_relu")).fused());
  EXPECT_FALSE(dynamic_cast<const OnednnReLULayer&>(*copied->layer_by_name("b_relu")).fused());
  for (int pass = 1; pass <= 2; ++pass) {
    const std::string when = "pass " + std::to_string(pass) + ": ";
    float loss[2];
    lent->Forward(&loss[0]);
    copied->Forward(&loss[1]);
    EXPECT_EQ(loss[0], loss[1]) << when;
    EXPECT_EQ(identity->diff(), lent->blob_by_name("b")->diff()) << when;
    EXPECT_NE(copied->bottom_vecs()[sum][0]->diff(), copied->blob_by_name("b")->diff()) << when;
    // Down to the Eltwise: b_2c's diff is left for its BatchNorm, then its own again.
    lent->BackwardFromTo(last, sum);
    EXPECT_TRUE(eltwise.LeftToReader(*lent->blob_by_name("b_2c"))) << when;
    lent->BackwardFromTo(sum - 1, 0);
    EXPECT_FALSE(eltwise.LeftToReader(*lent->blob_by_name("b_2c"))) << when;
    copied->Backward();
    ExpectSameBlobs(*lent, *copied, when);
  }
}

TEST_F(OnednnLayoutsTest, ADiffWrittenAfterTheShortcutSumIsTheOneRead) {
  // A diff written between the Eltwise's Backward and its BatchNorm's (here by the test) is
  // the one that BatchNorm reads, as in Caffe.
  auto [lent, copied] = TwinNets(ResNetStage(), ResNetStage("eltwise_param { engine: CAFFE }"));
  const int sum = LayerIndex(*lent, "b");
  const int last = static_cast<int>(lent->layers().size()) - 1;
  Rng rng(23);
  Blob<float> written(lent->blob_by_name("b_2c")->shape());
  FillGaussian(&written, rng);
  for (Net<float>* net : {lent.get(), copied.get()}) {
    net->Forward();
    net->BackwardFromTo(last, sum);
    Blob<float>& diff = *net->blob_by_name("b_2c");
    std::copy_n(written.cpu_data(), written.count(), diff.mutable_cpu_diff());
    net->BackwardFromTo(sum - 1, 0);
  }
  ExpectSameBlobs(*lent, *copied, "");
}

// The fused BatchNorm in place on `blob`.
const OnednnBatchNormLayer& BatchNormOn(const Net<float>& net, const std::string& blob) {
  const Blob<float>* target = net.blob_by_name(blob).get();
  for (std::size_t i = 0; i < net.layers().size(); ++i) {
    const auto* batch_norm = dynamic_cast<const OnednnBatchNormLayer*>(net.layers()[i].get());
    if (batch_norm != nullptr && net.top_vecs()[i][0] == target) return *batch_norm;
  }
  throw std::logic_error("no BatchNorm on " + blob);
}

TEST_F(OnednnLayoutsTest, BatchNormTakesItsInputsBufferInsteadOfCopying) {
  // A fused in-place BatchNorm keeps its blocked input for Backward by the net's exchange of
  // the blob's buffer for one of the layer's, which takes the output. Where something else
  // holds the buffer too (here the test), it copies the input instead: the same results.
  auto [taking, copying] = TwinNets(ResNetStage(), ResNetStage());
  std::vector<std::shared_ptr<SyncedMemory>> held;
  for (const auto& blob : copying->blobs()) held.push_back(blob->data());
  const Blob<float>& taken = *taking->blob_by_name("a_2c");
  const Blob<float>& copied = *copying->blob_by_name("a_2c");
  for (int pass = 1; pass <= 2; ++pass) {
    const std::string when = "pass " + std::to_string(pass) + ": ";
    const SyncedMemory* before = taken.data().get();
    const std::uint64_t taken_generation = taken.data_generation();
    const std::uint64_t copied_generation = copied.data_generation();
    float loss[2];
    taking->Forward(&loss[0]);
    copying->Forward(&loss[1]);
    EXPECT_EQ(loss[0], loss[1]) << when;
    EXPECT_NE(taken.data().get(), before) << when;
    EXPECT_EQ(taken.data_generation(), taken_generation + 1) << when;
    EXPECT_EQ(copied.data_generation(), copied_generation) << when;
    EXPECT_EQ(BatchNormOn(*taking, "a_2c").exchanges(), static_cast<std::uint64_t>(pass)) << when;
    EXPECT_EQ(BatchNormOn(*copying, "a_2c").exchanges(), 0u) << when;
    EXPECT_NE(OnednnLayoutOf(*taken.data()), nullptr) << when;
    for (std::size_t b = 0; b < held.size(); ++b) {
      EXPECT_EQ(copying->blobs()[b]->data(), held[b]) << when << copying->blob_names()[b];
    }
    taking->Backward();
    copying->Backward();
    ExpectSameBlobs(*taking, *copying, when);
  }
}

TEST_F(OnednnLayoutsTest, ResNetStageKeepsResults) { ExpectSameResults(ResNetStage(), "b_2c"); }

}  // namespace
}  // namespace doppio

#endif  // DOPPIO_WITH_ONEDNN
