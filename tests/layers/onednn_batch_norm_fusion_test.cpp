// The oneDNN engine's fusion of BatchNorm + Scale (+ ReLU), ResNet's pattern
// (src/layers/onednn_fusion.cpp): a net whose three layers run in place on the convolution's
// output, and so are fused into one batch normalization primitive, computes what the same
// net computes with each layer writing a blob of its own, which is not fused: outputs, loss,
// the running statistics, every parameter gradient (the Scale's included) and the input's
// gradient, with batch statistics and with use_global_stats, in TRAIN and TEST. Where the
// BatchNorm does not run in place, or the ReLU is leaky, that part is not fused. A forward
// pass that starts at a fused layer is refused with an Error naming it. Inputs holding NaN
// and infinities give what the CAFFE engine's layers give, a NaN where they give one
// (fuse_norm_relu would make it 0).
#ifdef DOPPIO_WITH_ONEDNN

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "doppio/core/net.hpp"
#include "doppio/layers/onednn_batch_norm_layer.hpp"
#include "doppio/layers/onednn_relu_layer.hpp"
#include "doppio/layers/onednn_scale_layer.hpp"
#include "engine_comparison.hpp"
#include "nonfinite_cases.hpp"
#include "test_util.hpp"

namespace doppio {
namespace {

struct Options {
  bool in_place = true;      // BatchNorm, Scale and ReLU on the convolutions' outputs
  std::string global_stats;  // "", or batch_norm_param's use_global_stats ("true"/"false")
  float slope = 0.f;         // the first ReLU's negative_slope
  std::string bn1_top = "";  // where bn1 writes (empty: as in_place says)
};

// conv1 -> bn1 -> sc1 (with bias) -> relu1 -> conv2 -> bn2 -> sc2 (no bias) -> pool -> ip ->
// loss: the first pattern with a ReLU, the second without (ResNet's branch before the sum).
// The convolutions have no bias, as in ResNet: before a BatchNorm with batch statistics its
// gradient is zero, and two engines' roundings of zero differ by more than any relative bound.
std::string TestNet(const Options& o) {
  const auto top = [&](const std::string& layer, const std::string& in_place_top) {
    return o.in_place ? in_place_top : layer;
  };
  const std::string bn1 = o.bn1_top.empty() ? top("bn1", "conv1") : o.bn1_top;
  const std::string sc1 = o.bn1_top.empty() ? top("sc1", "conv1") : o.bn1_top;
  const std::string relu1 = o.bn1_top.empty() ? top("relu1", "conv1") : o.bn1_top;
  const std::string bn2 = top("bn2", "conv2");
  const std::string sc2 = top("sc2", "conv2");
  const std::string stats =
      o.global_stats.empty() ? "" : "batch_norm_param { use_global_stats: " + o.global_stats + " }";
  return R"(
    name: 'bn_fusion' force_backward: true
    layer { name: 'data' type: 'Input' top: 'data' top: 'label'
            input_param { shape { dim: 4 dim: 3 dim: 9 dim: 9 } shape { dim: 4 } } }
    layer { name: 'conv1' type: 'Convolution' bottom: 'data' top: 'conv1'
            convolution_param { num_output: 6 kernel_size: 3 pad: 1 bias_term: false
                                weight_filler { type: 'gaussian' std: 0.3 } } }
    layer { name: 'bn1' type: 'BatchNorm' bottom: 'conv1' top: ')" +
         bn1 + "' " + stats + R"( }
    layer { name: 'sc1' type: 'Scale' bottom: ')" +
         bn1 + "' top: '" + sc1 + R"('
            scale_param { bias_term: true filler { type: 'gaussian' std: 1 }
                          bias_filler { type: 'gaussian' std: 0.5 } } }
    layer { name: 'relu1' type: 'ReLU' bottom: ')" +
         sc1 + "' top: '" + relu1 + "' relu_param { negative_slope: " + std::to_string(o.slope) +
         R"( } }
    layer { name: 'conv2' type: 'Convolution' bottom: ')" +
         relu1 + R"(' top: 'conv2'
            convolution_param { num_output: 5 kernel_size: 3 stride: 2 bias_term: false
                                weight_filler { type: 'gaussian' std: 0.3 } } }
    layer { name: 'bn2' type: 'BatchNorm' bottom: 'conv2' top: ')" +
         bn2 + "' " + stats + R"( }
    layer { name: 'sc2' type: 'Scale' bottom: ')" +
         bn2 + "' top: '" + sc2 + R"('
            scale_param { filler { type: 'gaussian' std: 1 } } }
    layer { name: 'pool' type: 'Pooling' bottom: ')" +
         sc2 + R"(' top: 'pool' pooling_param { pool: AVE kernel_size: 2 stride: 2 } }
    layer { name: 'ip' type: 'InnerProduct' bottom: 'pool' top: 'ip'
            inner_product_param { num_output: 5 weight_filler { type: 'gaussian' std: 0.3 } } }
    layer { name: 'loss' type: 'SoftmaxWithLoss' bottom: 'ip' bottom: 'label' top: 'loss' }
  )";
}

std::unique_ptr<Net<float>> MakeNet(const Options& o, Phase phase) {
  NetParameter param = ParseText<NetParameter>(TestNet(o));
  param.mutable_state()->set_phase(phase);
  return std::make_unique<Net<float>>(param);
}

bool BatchNormFused(const Net<float>& net, const std::string& name) {
  const auto* layer = dynamic_cast<const OnednnBatchNormLayer*>(net.layer_by_name(name).get());
  return layer != nullptr && layer->fused();
}

bool ScaleFused(const Net<float>& net, const std::string& name) {
  const auto* layer = dynamic_cast<const OnednnScaleLayer*>(net.layer_by_name(name).get());
  return layer != nullptr && layer->fused();
}

bool ReLUFused(const Net<float>& net, const std::string& name) {
  const auto* layer = dynamic_cast<const OnednnReLULayer*>(net.layer_by_name(name).get());
  return layer != nullptr && layer->fused();
}

// Stored statistics a net with use_global_stats can use: running sums of means, of positive
// variances, and a positive moving-average factor.
void SetStoredStatistics(Net<float>& net, Rng& rng) {
  for (const char* name : {"bn1", "bn2"}) {
    const auto& blobs = net.layer_by_name(name)->blobs();
    FillGaussian(blobs[0].get(), rng);
    FillUniform(blobs[1].get(), rng, 0.5f, 2.f);
    blobs[2]->mutable_cpu_data()[0] = 1.5f;
  }
}

void ExpectBlobsClose(const Net<float>& got, const Net<float>& want, const std::string& layer,
                      double tolerance, const std::string& when) {
  const auto& g = got.layer_by_name(layer)->blobs();
  const auto& w = want.layer_by_name(layer)->blobs();
  ASSERT_EQ(g.size(), w.size());
  for (std::size_t b = 0; b < w.size(); ++b) {
    const std::string what = when + layer + " blob " + std::to_string(b);
    ExpectClose(g[b]->cpu_data(), w[b]->cpu_data(), w[b]->count(), tolerance, what + " data");
    ExpectClose(g[b]->cpu_diff(), w[b]->cpu_diff(), w[b]->count(), tolerance, what + " diff");
  }
}

// Gives `fused` the inputs and parameters of `unfused`, runs both forward and backward
// (twice, so that gradients accumulate and the running sums move twice), and compares.
void ExpectSameResults(Net<float>& unfused, Net<float>& fused, bool backward) {
  Rng rng(11);
  FillGaussian(unfused.blob_by_name("data").get(), rng, 0.5f, 2.f);
  Blob<float>& label = *unfused.blob_by_name("label");
  for (int i = 0; i < label.count(); ++i) label.mutable_cpu_data()[i] = static_cast<float>(i % 5);
  SetStoredStatistics(unfused, rng);
  fused.blob_by_name("data")->CopyFrom(*unfused.blob_by_name("data"));
  fused.blob_by_name("label")->CopyFrom(label);
  ASSERT_EQ(unfused.learnable_params().size(), fused.learnable_params().size());
  for (std::size_t p = 0; p < unfused.learnable_params().size(); ++p) {
    fused.learnable_params()[p]->CopyFrom(*unfused.learnable_params()[p]);
  }
  const double tolerance = 2e-5;
  for (int pass = 1; pass <= 2; ++pass) {
    const std::string when = "pass " + std::to_string(pass) + ": ";
    float loss[2];
    unfused.Forward(&loss[0]);
    fused.Forward(&loss[1]);
    EXPECT_NEAR(loss[1], loss[0], tolerance * std::fabs(loss[0])) << when;
    for (const char* blob : {"ip", "pool"}) {
      const Blob<float>& want = *unfused.blob_by_name(blob);
      ExpectClose(fused.blob_by_name(blob)->cpu_data(), want.cpu_data(), want.count(), tolerance,
                  when + blob);
    }
    if (backward) {
      unfused.Backward();
      fused.Backward();
      ExpectClose(fused.blob_by_name("data")->cpu_diff(), unfused.blob_by_name("data")->cpu_diff(),
                  unfused.blob_by_name("data")->count(), tolerance, when + "data diff");
    }
    // The BatchNorms' running sums; the Scales' parameters and gradients; the convolutions'
    // gradients, which the fused Backward's bottom diff feeds.
    for (const char* layer : {"bn1", "bn2", "sc1", "sc2", "conv1", "conv2", "ip"}) {
      ExpectBlobsClose(fused, unfused, layer, tolerance, when);
    }
  }
}

void CompareFusedWithUnfused(Options o, Phase phase) {
  o.in_place = false;
  const auto unfused = MakeNet(o, phase);
  o.in_place = true;
  const auto fused = MakeNet(o, phase);
  for (const char* layer : {"bn1", "bn2"}) EXPECT_FALSE(BatchNormFused(*unfused, layer));
  for (const char* layer : {"bn1", "bn2"}) EXPECT_TRUE(BatchNormFused(*fused, layer)) << layer;
  EXPECT_TRUE(ScaleFused(*fused, "sc1"));
  EXPECT_TRUE(ScaleFused(*fused, "sc2"));
  EXPECT_TRUE(ReLUFused(*fused, "relu1"));
  ExpectSameResults(*unfused, *fused, /*backward=*/true);
}

TEST(OnednnBatchNormFusionTest, TrainWithBatchStatisticsEqualsUnfused) {
  CompareFusedWithUnfused(Options(), TRAIN);
}

TEST(OnednnBatchNormFusionTest, TrainWithGlobalStatisticsEqualsUnfused) {
  Options o;
  o.global_stats = "true";
  CompareFusedWithUnfused(o, TRAIN);
}

// TEST: use_global_stats by default. force_backward still gives the gradients.
TEST(OnednnBatchNormFusionTest, TestPhaseEqualsUnfused) {
  CompareFusedWithUnfused(Options(), TEST);
}

TEST(OnednnBatchNormFusionTest, LeakyReLUIsLeftOut) {
  Options o;
  o.slope = 0.1f;
  const auto fused = MakeNet(o, TRAIN);
  EXPECT_TRUE(BatchNormFused(*fused, "bn1"));
  EXPECT_TRUE(ScaleFused(*fused, "sc1"));
  EXPECT_FALSE(ReLUFused(*fused, "relu1"));
  o.in_place = false;
  const auto unfused = MakeNet(o, TRAIN);
  ExpectSameResults(*unfused, *fused, /*backward=*/true);
}

TEST(OnednnBatchNormFusionTest, BatchNormNotInPlaceIsNotFused) {
  // bn1 writes a blob of its own, which sc1 and relu1 then overwrite in place: its output
  // lives apart from the convolution's, so there is no in-place chain to fuse.
  Options o;
  o.bn1_top = "bn1";
  const auto net = MakeNet(o, TRAIN);
  EXPECT_FALSE(BatchNormFused(*net, "bn1"));
  EXPECT_FALSE(ScaleFused(*net, "sc1"));
  EXPECT_TRUE(BatchNormFused(*net, "bn2"));
  o.in_place = false;
  o.bn1_top.clear();
  const auto unfused = MakeNet(o, TRAIN);
  ExpectSameResults(*unfused, *net, /*backward=*/true);
}

TEST(OnednnBatchNormFusionTest, CaffeScaleIsNotFused) {
  NetParameter param = ParseText<NetParameter>(TestNet(Options()));
  for (auto& layer : *param.mutable_layer()) {
    if (layer.type() == "Scale") layer.mutable_scale_param()->set_engine(ScaleParameter::CAFFE);
  }
  Net<float> net(param);
  EXPECT_EQ(net.layer_by_name("sc1")->engine(), "CAFFE");
  EXPECT_EQ(net.layer_by_name("bn1")->engine(), "ONEDNN");
  EXPECT_FALSE(BatchNormFused(net, "bn1"));
}

// Net::ForwardFromTo starting at a fused layer would leave its output as its host last
// computed it: refused, naming the layer and where to start instead. Starting at the host, or
// running the pass in pieces split elsewhere, works.
TEST(OnednnBatchNormFusionTest, ForwardFromAFusedLayerIsRefused) {
  const auto net = MakeNet(Options(), TRAIN);
  const auto index = [&](const std::string& name) {
    const auto& names = net->layer_names();
    return static_cast<int>(std::find(names.begin(), names.end(), name) - names.begin());
  };
  const int last = static_cast<int>(net->layers().size()) - 1;
  Rng rng(3);
  FillGaussian(net->blob_by_name("data").get(), rng);
  net->Forward();
  ExpectError([&] { net->ForwardFromTo(index("sc1"), last); },
              {"layer 'sc1' (Scale)", "layer 'bn1' (BatchNorm)", "ForwardFromTo"});
  ExpectError([&] { net->ForwardFromTo(index("relu1"), last); }, {"layer 'relu1' (ReLU)"});
  const float whole = net->ForwardFromTo(0, last);
  net->ForwardFromTo(0, index("bn1"));
  EXPECT_FLOAT_EQ(net->ForwardFromTo(index("bn1") + 1, last), whole);
  net->ForwardFromTo(index("bn2"), last);
}

// A depthwise 1x1 convolution (it keeps each channel's values apart), then BatchNorm, Scale
// and ReLU in place on its output, all on `engine`: fused on ONEDNN.
std::unique_ptr<Net<float>> DepthwiseBatchNormReLU(const std::string& engine, Phase phase) {
  NetParameter param = ParseText<NetParameter>(R"(
    name: 'bn_nonfinite' force_backward: true
    layer { name: 'data' type: 'Input' top: 'data'
            input_param { shape { dim: 2 dim: 16 dim: 4 dim: 4 } } }
    layer { name: 'conv' type: 'Convolution' bottom: 'data' top: 'conv'
            convolution_param { num_output: 16 group: 16 kernel_size: 1 bias_term: false
                                engine: )" + engine +
                                               R"(
                                weight_filler { type: 'gaussian' std: 1 } } }
    layer { name: 'bn' type: 'BatchNorm' bottom: 'conv' top: 'conv'
            batch_norm_param { engine: )" + engine +
                                               R"( } }
    layer { name: 'sc' type: 'Scale' bottom: 'conv' top: 'conv'
            scale_param { bias_term: true engine: )" +
                                               engine + R"(
                          filler { type: 'gaussian' std: 1 }
                          bias_filler { type: 'gaussian' std: 0.5 } } }
    layer { name: 'relu' type: 'ReLU' bottom: 'conv' top: 'conv'
            relu_param { engine: )" + engine + R"( } }
  )");
  param.mutable_state()->set_phase(phase);
  return std::make_unique<Net<float>>(param);
}

std::vector<float> Values(const float* values, int count) {
  return std::vector<float>(values, values + count);
}

// A NaN in channel 1, +inf in channel 5 and -inf in channel 9: outputs, the input's gradient,
// the parameters' gradients and the running sums as the CAFFE engine gives them. With batch
// statistics (TRAIN) each of those channels is NaN throughout; with stored ones (TEST) only
// where the value was, an infinity becoming +inf or 0.
void ExpectNonFiniteLikeCaffe(Phase phase) {
  const auto caffe = DepthwiseBatchNormReLU("CAFFE", phase);
  const auto onednn = DepthwiseBatchNormReLU("ONEDNN", phase);
  ASSERT_TRUE(BatchNormFused(*onednn, "bn"));
  ASSERT_TRUE(ReLUFused(*onednn, "relu"));
  Rng rng(13);
  const auto& stats = onednn->layer_by_name("bn")->blobs();
  FillGaussian(stats[0].get(), rng);
  FillUniform(stats[1].get(), rng, 0.5f, 2.f);
  stats[2]->mutable_cpu_data()[0] = 1.5f;
  for (const char* layer : {"conv", "bn", "sc"}) {
    const auto& from = onednn->layer_by_name(layer)->blobs();
    const auto& to = caffe->layer_by_name(layer)->blobs();
    for (std::size_t b = 0; b < from.size(); ++b) to[b]->CopyFrom(*from[b]);
  }
  using nonfinite::kInf;
  for (Net<float>* net : {caffe.get(), onednn.get()}) {
    nonfinite::Fill(net->blob_by_name("data").get(),
                    {{16 + 3, nonfinite::kNaN}, {256 + 5 * 16 + 7, kInf}, {9 * 16 + 2, -kInf}});
    net->Forward();
  }
  const Blob<float>& out = *caffe->blob_by_name("conv");
  const std::vector<float> want = Values(out.cpu_data(), out.count());
  ASSERT_TRUE(std::any_of(want.begin(), want.end(), [](float x) { return std::isnan(x); }));
  nonfinite::ExpectSameValues(want, onednn->blob_by_name("conv")->cpu_data(), "output", 1e-4);
  for (Net<float>* net : {caffe.get(), onednn.get()}) {
    Blob<float>& top = *net->blob_by_name("conv");
    for (int i = 0; i < top.count(); ++i) top.mutable_cpu_diff()[i] = float(i % 7 - 3) / 4;
    net->ClearParamDiffs();
    net->Backward();
  }
  const Blob<float>& data = *caffe->blob_by_name("data");
  nonfinite::ExpectSameValues(Values(data.cpu_diff(), data.count()),
                              onednn->blob_by_name("data")->cpu_diff(), "data diff", 1e-4);
  for (const char* layer : {"conv", "bn", "sc"}) {
    const auto& got = onednn->layer_by_name(layer)->blobs();
    const auto& expected = caffe->layer_by_name(layer)->blobs();
    for (std::size_t b = 0; b < got.size(); ++b) {
      const std::string what = std::string(layer) + " blob " + std::to_string(b);
      const Blob<float>& w = *expected[b];
      nonfinite::ExpectSameValues(Values(w.cpu_data(), w.count()), got[b]->cpu_data(),
                                  what + " data", 1e-4);
      nonfinite::ExpectSameValues(Values(w.cpu_diff(), w.count()), got[b]->cpu_diff(),
                                  what + " diff", 1e-4);
    }
  }
}

TEST(OnednnBatchNormFusionTest, BatchStatisticsPassNonFiniteValuesAsCaffe) {
  ExpectNonFiniteLikeCaffe(TRAIN);
}

TEST(OnednnBatchNormFusionTest, StoredStatisticsPassNonFiniteValuesAsCaffe) {
  ExpectNonFiniteLikeCaffe(TEST);
}

}  // namespace
}  // namespace doppio

#endif  // DOPPIO_WITH_ONEDNN
