// The oneDNN engine's fusion of Convolution or InnerProduct + in-place ReLU
// (src/layers/onednn_fusion.cpp): a net whose ReLUs run in place, and so are fused, computes
// what the same net computes with its ReLUs writing other blobs, which are not fused: the
// outputs, the loss, every parameter gradient and the input's gradient, in TRAIN and TEST. A
// ReLU not in place (as it must be where another layer also reads the convolution's output),
// with a negative slope, or on the CAFFE engine, is not fused. Inputs holding NaN and
// infinities give what the CAFFE engine's unfused layers give, a NaN where they give one
// (oneDNN's post-op would make it 0), for Convolution, InnerProduct and Eltwise SUM.
#ifdef DOPPIO_WITH_ONEDNN

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "doppio/core/layer_fusion.hpp"
#include "doppio/core/net.hpp"
#include "doppio/layers/onednn_conv_layer.hpp"
#include "doppio/layers/onednn_relu_layer.hpp"
#include "engine_comparison.hpp"
#include "nonfinite_cases.hpp"
#include "test_util.hpp"

namespace doppio {
namespace {

// Two convolutions with ReLUs (the second leaky), pooling, two inner products (the first with
// a ReLU) and a loss. With `in_place` the ReLUs overwrite their bottoms; otherwise they write
// blobs of their own. `extra` goes right after conv1 (a second reader of its output).
std::string TestNet(bool in_place, float slope2, const std::string& extra = "") {
  const std::string relu1 = in_place ? "conv1" : "relu1";
  const std::string relu2 = in_place ? "conv2" : "relu2";
  const std::string relu3 = in_place ? "ip1" : "relu3";
  return R"(
    name: 'fusion' force_backward: true
    layer { name: 'data' type: 'Input' top: 'data' top: 'label'
            input_param { shape { dim: 4 dim: 3 dim: 12 dim: 12 } shape { dim: 4 } } }
    layer { name: 'conv1' type: 'Convolution' bottom: 'data' top: 'conv1'
            convolution_param { num_output: 8 kernel_size: 3 pad: 1 engine: ONEDNN
                                weight_filler { type: 'gaussian' std: 0.3 }
                                bias_filler { type: 'gaussian' std: 0.3 } } }
    )" + extra +
         R"(
    layer { name: 'relu1' type: 'ReLU' bottom: 'conv1' top: ')" +
         relu1 + R"(' }
    layer { name: 'conv2' type: 'Convolution' bottom: ')" +
         relu1 + R"(' top: 'conv2'
            convolution_param { num_output: 6 kernel_size: 3 stride: 2 engine: ONEDNN
                                weight_filler { type: 'gaussian' std: 0.3 }
                                bias_filler { type: 'gaussian' std: 0.3 } } }
    layer { name: 'relu2' type: 'ReLU' bottom: 'conv2' top: ')" +
         relu2 + "' relu_param { negative_slope: " + std::to_string(slope2) + R"( } }
    layer { name: 'pool' type: 'Pooling' bottom: ')" +
         relu2 + R"(' top: 'pool' pooling_param { pool: MAX kernel_size: 2 stride: 2 } }
    layer { name: 'ip1' type: 'InnerProduct' bottom: 'pool' top: 'ip1'
            inner_product_param { num_output: 7 weight_filler { type: 'gaussian' std: 0.3 }
                                  bias_filler { type: 'gaussian' std: 0.3 } } }
    layer { name: 'relu3' type: 'ReLU' bottom: 'ip1' top: ')" +
         relu3 + R"(' }
    layer { name: 'ip' type: 'InnerProduct' bottom: ')" +
         relu3 + R"(' top: 'ip'
            inner_product_param { num_output: 5 weight_filler { type: 'gaussian' std: 0.3 } } }
    layer { name: 'loss' type: 'SoftmaxWithLoss' bottom: 'ip' bottom: 'label' top: 'loss' }
  )";
}

std::unique_ptr<Net<float>> MakeNet(const std::string& text, Phase phase) {
  NetParameter param = ParseText<NetParameter>(text);
  param.mutable_state()->set_phase(phase);
  return std::make_unique<Net<float>>(param);
}

bool Fused(const Net<float>& net, const std::string& relu) {
  const auto* layer = dynamic_cast<const OnednnReLULayer*>(net.layer_by_name(relu).get());
  return layer != nullptr && layer->fused();
}

// Gives `b` the inputs and parameters of `a`, runs both forward and backward (twice, so that
// the parameter gradients accumulate), and compares the results.
void ExpectSameResults(Net<float>& a, Net<float>& b, Phase phase) {
  Rng rng(5);
  FillGaussian(a.blob_by_name("data").get(), rng);
  Blob<float>& label = *a.blob_by_name("label");
  for (int i = 0; i < label.count(); ++i) label.mutable_cpu_data()[i] = static_cast<float>(i % 5);
  b.blob_by_name("data")->CopyFrom(*a.blob_by_name("data"));
  b.blob_by_name("label")->CopyFrom(label);
  ASSERT_EQ(a.learnable_params().size(), b.learnable_params().size());
  for (std::size_t p = 0; p < a.learnable_params().size(); ++p) {
    b.learnable_params()[p]->CopyFrom(*a.learnable_params()[p]);
  }
  const double tolerance = 1e-5;
  for (int pass = 1; pass <= 2; ++pass) {
    float loss[2];
    a.Forward(&loss[0]);
    b.Forward(&loss[1]);
    EXPECT_NEAR(loss[0], loss[1], tolerance * std::fabs(loss[0]));
    ExpectClose(b.blob_by_name("ip")->cpu_data(), a.blob_by_name("ip")->cpu_data(),
                a.blob_by_name("ip")->count(), tolerance, "ip");
    ExpectClose(b.blob_by_name("pool")->cpu_data(), a.blob_by_name("pool")->cpu_data(),
                a.blob_by_name("pool")->count(), tolerance, "pool");
    if (phase == TEST) continue;
    a.Backward();
    b.Backward();
    const std::string when = "pass " + std::to_string(pass) + ": ";
    for (std::size_t p = 0; p < a.learnable_params().size(); ++p) {
      const Blob<float>& want = *a.learnable_params()[p];
      ExpectClose(b.learnable_params()[p]->cpu_diff(), want.cpu_diff(), want.count(), tolerance,
                  when + "gradient of learnable blob " + std::to_string(p));
    }
    ExpectClose(b.blob_by_name("data")->cpu_diff(), a.blob_by_name("data")->cpu_diff(),
                a.blob_by_name("data")->count(), tolerance, when + "data diff");
  }
}

void CompareFusedWithUnfused(Phase phase, float slope2) {
  const auto unfused = MakeNet(TestNet(false, slope2), phase);
  const auto fused = MakeNet(TestNet(true, slope2), phase);
  EXPECT_FALSE(Fused(*unfused, "relu1"));
  EXPECT_FALSE(Fused(*unfused, "relu2"));
  EXPECT_TRUE(Fused(*fused, "relu1"));
  EXPECT_TRUE(Fused(*fused, "relu2"));
  EXPECT_TRUE(Fused(*fused, "relu3"));
  ExpectSameResults(*unfused, *fused, phase);
}

TEST(OnednnFusionTest, FusedTrainNetEqualsUnfused) { CompareFusedWithUnfused(TRAIN, 0.1f); }

TEST(OnednnFusionTest, FusedTestNetEqualsUnfused) { CompareFusedWithUnfused(TEST, 0.f); }

TEST(OnednnFusionTest, ConvolutionOutputReadElsewhereIsNotFused) {
  // 'probe' reads conv1's output beside relu1, which therefore cannot run in place (a net
  // refuses an in-place layer on a blob another layer also reads): relu1 is not fused, and
  // the probe sees the convolution's output before the ReLU, negative values included.
  const std::string probe =
      "layer { name: 'probe' type: 'Pooling' bottom: 'conv1' top: 'probe' "
      "pooling_param { pool: AVE kernel_size: 2 stride: 2 } }";
  EXPECT_THROW(MakeNet(TestNet(true, 0.f, probe), TRAIN), Error);
  const auto net = MakeNet(TestNet(false, 0.f, probe), TRAIN);
  EXPECT_FALSE(Fused(*net, "relu1"));
  Rng rng(7);
  FillGaussian(net->blob_by_name("data").get(), rng);
  net->Forward();
  const Blob<float>& seen = *net->blob_by_name("probe");
  EXPECT_LT(*std::min_element(seen.cpu_data(), seen.cpu_data() + seen.count()), 0.f);
}

TEST(OnednnFusionTest, NegativeSlopeIsNotFused) {
  const auto fused = MakeNet(TestNet(true, -0.5f), TRAIN);
  EXPECT_TRUE(Fused(*fused, "relu1"));
  EXPECT_FALSE(Fused(*fused, "relu2"));
  const auto unfused = MakeNet(TestNet(false, -0.5f), TRAIN);
  ExpectSameResults(*unfused, *fused, TRAIN);
}

TEST(OnednnFusionTest, CaffeReLUIsNotFused) {
  NetParameter param = ParseText<NetParameter>(TestNet(true, 0.f));
  for (auto& layer : *param.mutable_layer()) {
    if (layer.type() == "ReLU") layer.mutable_relu_param()->set_engine(ReLUParameter::CAFFE);
  }
  Net<float> net(param);
  EXPECT_EQ(net.layer_by_name("relu1")->engine(), "CAFFE");
  EXPECT_EQ(net.layer_by_name("conv1")->engine(), "ONEDNN");
  EXPECT_FALSE(Fused(net, "relu1"));
}

// Net::ForwardFromTo starting at a fused ReLU would leave the convolution's output as it was
// (relu applied by the last full pass): refused, naming the ReLU and the convolution.
TEST(OnednnFusionTest, ForwardFromAFusedReLUIsRefused) {
  const auto net = MakeNet(TestNet(true, 0.f), TRAIN);
  const auto& names = net->layer_names();
  const int relu1 =
      static_cast<int>(std::find(names.begin(), names.end(), "relu1") - names.begin());
  const int last = static_cast<int>(names.size()) - 1;
  Rng rng(9);
  FillGaussian(net->blob_by_name("data").get(), rng);
  net->Forward();
  ExpectError([&] { net->ForwardFromTo(relu1, last); },
              {"layer 'relu1' (ReLU)", "layer 'conv1' (Convolution)", "ForwardFromTo"});
  net->ForwardFromTo(0, relu1 - 1);
  net->ForwardFromTo(relu1, last);
}

// `layer` ("%ENGINE%": its engine) reading 'a' (and 'b' with two bottoms) of dims `shape`,
// and an in-place ReLU of `slope` on its output 'out', both on `engine`: fused on ONEDNN.
std::unique_ptr<Net<float>> LayerWithReLU(const std::string& layer, int bottoms,
                                          const std::string& shape, float slope,
                                          const std::string& engine) {
  const std::string input = "shape { " + shape + " } ";
  std::string text =
      "name: 'nonfinite' force_backward: true "
      "layer { name: 'in' type: 'Input' top: 'a' " +
      std::string(bottoms == 2 ? "top: 'b' " : "") + "input_param { " + input +
      (bottoms == 2 ? input : "") + "} } layer { name: 'l' " + layer + " bottom: 'a' " +
      (bottoms == 2 ? "bottom: 'b' " : "") +
      "top: 'out' } layer { name: 'relu' type: 'ReLU' bottom: 'out' top: 'out' "
      "relu_param { negative_slope: " +
      std::to_string(slope) + " engine: %ENGINE% } }";
  const std::string mark = "%ENGINE%";
  for (auto at = text.find(mark); at != std::string::npos; at = text.find(mark)) {
    text.replace(at, mark.size(), engine);
  }
  return MakeNet(text, TRAIN);
}

std::vector<float> Values(const float* values, int count) {
  return std::vector<float>(values, values + count);
}

// The fused layer and ReLU on ONEDNN, and the same layers unfused on CAFFE, given the same
// parameters and inputs holding the non-finite values `special` (per bottom: index and value):
// the same outputs, a NaN where CAFFE's has one, and the same bottom and parameter gradients.
// With `winograd` (its results round differently) only where CAFFE's output is NaN, and with a
// slope of 0 only (oneDNN's Winograd kernels take no other post-op).
void ExpectNonFiniteLikeCaffe(const std::string& layer, const std::string& shape,
                              const std::vector<std::vector<std::pair<int, float>>>& special,
                              bool winograd = false) {
  const int bottoms = static_cast<int>(special.size());
  for (const float slope : winograd ? std::vector<float>{0.f} : std::vector<float>{0.f, 0.25f}) {
    SCOPED_TRACE("negative_slope " + std::to_string(slope));
    const auto caffe = LayerWithReLU(layer, bottoms, shape, slope, "CAFFE");
    const auto onednn = LayerWithReLU(layer, bottoms, shape, slope, "ONEDNN");
    ASSERT_TRUE(Fused(*onednn, "relu"));
    if (winograd) {
      const auto* conv =
          dynamic_cast<const OnednnConvolutionLayer*>(onednn->layer_by_name("l").get());
      ASSERT_TRUE(conv != nullptr && conv->winograd());
    }
    for (std::size_t p = 0; p < caffe->learnable_params().size(); ++p) {
      caffe->learnable_params()[p]->CopyFrom(*onednn->learnable_params()[p]);
    }
    const char* names[] = {"a", "b"};
    for (int b = 0; b < bottoms; ++b) {
      nonfinite::Fill(caffe->blob_by_name(names[b]).get(), special[b]);
      nonfinite::Fill(onednn->blob_by_name(names[b]).get(), special[b]);
    }
    caffe->Forward();
    onednn->Forward();
    const Blob<float>& out = *caffe->blob_by_name("out");
    std::vector<float> want = Values(out.cpu_data(), out.count());
    const float* got = onednn->blob_by_name("out")->cpu_data();
    ASSERT_TRUE(std::any_of(want.begin(), want.end(), [](float x) { return std::isnan(x); }));
    if (winograd) {
      // Its transforms spread a value that is not finite over a tile, and mix an infinity
      // with others into NaN: only CAFFE's NaN are compared.
      for (int i = 0; i < out.count(); ++i) {
        if (std::isnan(want[i])) EXPECT_TRUE(std::isnan(got[i])) << "out " << i << ": " << got[i];
      }
      continue;
    }
    nonfinite::ExpectSameValues(want, got, "out", 1e-4);
    for (Net<float>* net : {caffe.get(), onednn.get()}) {
      Blob<float>& top = *net->blob_by_name("out");
      for (int i = 0; i < top.count(); ++i) top.mutable_cpu_diff()[i] = float(i % 7 - 3) / 4;
      net->ClearParamDiffs();
      net->Backward();
    }
    for (int b = 0; b < bottoms; ++b) {
      const Blob<float>& diff = *caffe->blob_by_name(names[b]);
      nonfinite::ExpectSameValues(Values(diff.cpu_diff(), diff.count()),
                                  onednn->blob_by_name(names[b])->cpu_diff(),
                                  std::string(names[b]) + " diff", 1e-4);
    }
    for (std::size_t p = 0; p < caffe->learnable_params().size(); ++p) {
      const Blob<float>& want_diff = *caffe->learnable_params()[p];
      nonfinite::ExpectSameValues(Values(want_diff.cpu_diff(), want_diff.count()),
                                  onednn->learnable_params()[p]->cpu_diff(),
                                  "gradient of parameter " + std::to_string(p), 1e-4);
    }
  }
}

using nonfinite::kInf;
using nonfinite::kNaN;

TEST(OnednnFusionTest, ConvolutionPassesNonFiniteValuesAsCaffe) {
  // A NaN, +inf and -inf in different images and channels; a 5x5 kernel has no Winograd.
  ExpectNonFiniteLikeCaffe(
      "type: 'Convolution' convolution_param { num_output: 16 kernel_size: 5 pad: 2 "
      "engine: %ENGINE% weight_filler { type: 'gaussian' std: 0.3 } "
      "bias_filler { type: 'gaussian' std: 0.3 } }",
      "dim: 2 dim: 3 dim: 8 dim: 8", {{{10, kNaN}, {64 + 27, kInf}, {3 * 64 + 40, -kInf}}});
}

// Finite inputs whose output could overflow (inf - inf is NaN) run Caffe's ReLU too; ordinary
// ones keep the post-op.
TEST(OnednnFusionTest, OnlyOutputsThatMayHoldNaNLeaveThePostOp) {
  const auto net = LayerWithReLU(
      "type: 'Convolution' convolution_param { num_output: 16 kernel_size: 5 pad: 2 "
      "engine: %ENGINE% weight_filler { type: 'gaussian' std: 0.3 } }",
      1, "dim: 2 dim: 3 dim: 8 dim: 8", 0.f, "ONEDNN");
  const auto* conv = dynamic_cast<const OnednnFusionHost*>(net->layer_by_name("l").get());
  ASSERT_NE(conv, nullptr);
  Blob<float>& a = *net->blob_by_name("a");
  for (const auto& [value, caffe] : {std::pair{1.f, false}, {1e20f, false}, {1e35f, true}}) {
    std::fill_n(a.mutable_cpu_data(), a.count(), value);
    net->Forward();
    EXPECT_EQ(conv->ran_caffe_relu(), caffe) << "inputs " << value;
  }
}

TEST(OnednnFusionTest, PassesRunInTheirStatedOrder) {
  // The Eltwise lends its diff to a BatchNorm fused already (onednn_fusion.cpp): the
  // BatchNorm's pass comes first. The ResNet stage tests of onednn_layouts_test.cpp check
  // the lending itself. bf16's pass reads what the fused BatchNorms run: last.
  EXPECT_EQ(LayerFusions<float>::PassNames("ONEDNN"),
            (std::vector<std::string>{"Winograd scratchpad limit", "ReLU post-ops",
                                      "BatchNorm + Scale + ReLU", "Eltwise SUM lends diffs",
                                      "bf16 where the inputs are"}));
  EXPECT_TRUE(LayerFusions<float>::PassNames("CAFFE").empty());
}

TEST(OnednnFusionTest, WinogradConvolutionPassesNaNAsCaffe) {
  const std::string conv =
      "type: 'Convolution' convolution_param { num_output: 16 kernel_size: 3 pad: 1 "
      "engine: %ENGINE% weight_filler { type: 'gaussian' std: 0.3 } }";
  const auto probe = LayerWithReLU(conv, 1, "dim: 1 dim: 16 dim: 8 dim: 8", 0.f, "ONEDNN");
  if (!static_cast<const OnednnConvolutionLayer*>(probe->layer_by_name("l").get())->winograd()) {
    GTEST_SKIP() << "no Winograd kernel in this machine's oneDNN for the shape";
  }
  ExpectNonFiniteLikeCaffe(conv, "dim: 1 dim: 16 dim: 8 dim: 8",
                           {{{100, kNaN}, {300, kInf}, {700, -kInf}}}, /*winograd=*/true);
}

TEST(OnednnFusionTest, InnerProductPassesNonFiniteValuesAsCaffe) {
  // Image 0 holds a NaN, 1 +inf, 2 -inf, 3 nothing but finite values.
  ExpectNonFiniteLikeCaffe(
      "type: 'InnerProduct' inner_product_param { num_output: 6 engine: %ENGINE% "
      "weight_filler { type: 'gaussian' std: 0.3 } bias_filler { type: 'gaussian' std: 0.3 } }",
      "dim: 4 dim: 2 dim: 3 dim: 3", {{{4, kNaN}, {18 + 7, kInf}, {36 + 2, -kInf}}});
}

TEST(OnednnFusionTest, EltwiseSumPassesNonFiniteValuesAsCaffe) {
  // A NaN; +inf meeting -inf (NaN); +inf and -inf meeting finite values.
  ExpectNonFiniteLikeCaffe("type: 'Eltwise' eltwise_param { operation: SUM engine: %ENGINE% }",
                           "dim: 2 dim: 16 dim: 3 dim: 3",
                           {{{5, kNaN}, {40, kInf}, {200, -kInf}}, {{40, -kInf}, {77, kInf}}});
}

}  // namespace
}  // namespace doppio

#endif  // DOPPIO_WITH_ONEDNN
