// The cuDNN BatchNorm (engine CUDNN, the GPU's default) and its fusion with the in-place Scale
// after it (src/layers/cudnn_fusion.cpp), against the CAFFE engine's kernels on the same GPU:
// a net whose BatchNorm + Scale pairs run fused computes what the same net computes with
// engine: CAFFE for both layers: the loss, the outputs, the input's gradient, every parameter
// and gradient (the Scale's, which the fused Backward adds) and Caffe's running sums (which
// take cuDNN's unbiased batch variance), over two passes, so that gradients accumulate and the
// sums move twice. On ResNet-50's and GoogLeNet's activation shapes, in place and not; the
// weights written afterwards hold Caffe's separate BatchNorm and Scale blobs. TF32 off.
// Skipped without a device; the emulation has no cuDNN.
#ifdef DOPPIO_WITH_CUDNN

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>

#include "doppio/core/net.hpp"
#include "doppio/layers/cudnn_batch_norm_layer.hpp"
#include "doppio/layers/cudnn_scale_layer.hpp"
#include "gpu_test_util.hpp"
#include "test_util.hpp"

namespace doppio {
namespace {

struct Shape {
  int num, channels, height;
};

// conv1 -> bn1 -> sc1 (bias) -> relu1, all in place; conv2 -> bn2 (its own top) -> sc2 (no
// bias, in place on bn2's top) -> pool -> ip -> loss.
std::string TestNet(const Shape& s, const std::string& engine) {
  const std::string bn_engine = engine.empty() ? "" : "batch_norm_param { engine: " + engine + " }";
  const std::string sc_engine = engine.empty() ? "" : " engine: " + engine;
  const std::string c = std::to_string(s.channels);
  return R"(
    name: 'cudnn_bn' force_backward: true
    layer { name: 'data' type: 'Input' top: 'data' top: 'label'
            input_param { shape { dim: )" +
         std::to_string(s.num) + " dim: 3 dim: " + std::to_string(s.height) +
         " dim: " + std::to_string(s.height) + R"( } shape { dim: )" + std::to_string(s.num) +
         R"( } } }
    layer { name: 'conv1' type: 'Convolution' bottom: 'data' top: 'conv1'
            convolution_param { num_output: )" +
         c + R"( kernel_size: 3 pad: 1 bias_term: false
                                weight_filler { type: 'gaussian' std: 0.3 } } }
    layer { name: 'bn1' type: 'BatchNorm' bottom: 'conv1' top: 'conv1' )" +
         bn_engine + R"( }
    layer { name: 'sc1' type: 'Scale' bottom: 'conv1' top: 'conv1'
            scale_param { bias_term: true filler { type: 'gaussian' std: 1 }
                          bias_filler { type: 'gaussian' std: 0.5 })" +
         sc_engine + R"( } }
    layer { name: 'relu1' type: 'ReLU' bottom: 'conv1' top: 'conv1' }
    layer { name: 'conv2' type: 'Convolution' bottom: 'conv1' top: 'conv2'
            convolution_param { num_output: )" +
         c + R"( kernel_size: 1 bias_term: false
                                weight_filler { type: 'gaussian' std: 0.1 } } }
    layer { name: 'bn2' type: 'BatchNorm' bottom: 'conv2' top: 'bn2' )" +
         bn_engine + R"( }
    layer { name: 'sc2' type: 'Scale' bottom: 'bn2' top: 'bn2'
            scale_param { filler { type: 'gaussian' std: 1 })" +
         sc_engine + R"( } }
    layer { name: 'pool' type: 'Pooling' bottom: 'bn2' top: 'pool'
            pooling_param { pool: AVE global_pooling: true } }
    layer { name: 'ip' type: 'InnerProduct' bottom: 'pool' top: 'ip'
            inner_product_param { num_output: 5 weight_filler { type: 'gaussian' std: 0.3 } } }
    layer { name: 'loss' type: 'SoftmaxWithLoss' bottom: 'ip' bottom: 'label' top: 'loss' }
  )";
}

std::unique_ptr<Net<float>> MakeNet(const Shape& s, const std::string& engine) {
  NetParameter param = ParseText<NetParameter>(TestNet(s, engine));
  param.mutable_state()->set_phase(TRAIN);
  return std::make_unique<Net<float>>(param, 1701, TestGpu());
}

bool Fused(const Net<float>& net, const std::string& bn, const std::string& scale) {
  const auto* b = dynamic_cast<const CudnnBatchNormLayer<float>*>(net.layer_by_name(bn).get());
  const auto* s = dynamic_cast<const CudnnScaleLayer<float>*>(net.layer_by_name(scale).get());
  return b != nullptr && s != nullptr && b->fused() && s->fused();
}

void ExpectNetsClose(const Net<float>& got, const Net<float>& want, const std::string& when) {
  const double tolerance = 2e-4;
  for (const char* layer : {"conv1", "bn1", "sc1", "conv2", "bn2", "sc2", "ip"}) {
    const auto& g = got.layer_by_name(layer)->blobs();
    const auto& w = want.layer_by_name(layer)->blobs();
    ASSERT_EQ(g.size(), w.size()) << layer;
    for (std::size_t b = 0; b < w.size(); ++b) {
      const std::string what = when + layer + " blob " + std::to_string(b);
      ExpectBlobsClose(*w[b], *g[b], false, tolerance, what + " data");
      ExpectBlobsClose(*w[b], *g[b], true, tolerance, what + " diff");
    }
  }
  ExpectBlobsClose(*want.blob_by_name("ip"), *got.blob_by_name("ip"), false, tolerance,
                   when + "ip");
  ExpectBlobsClose(*want.blob_by_name("data"), *got.blob_by_name("data"), true, tolerance,
                   when + "data diff");
}

void CompareWithCaffeEngine(const Shape& s) {
  const auto reference = MakeNet(s, "CAFFE");
  const auto fused = MakeNet(s, "");
  EXPECT_FALSE(Fused(*reference, "bn1", "sc1"));
  EXPECT_TRUE(Fused(*fused, "bn1", "sc1"));
  EXPECT_TRUE(Fused(*fused, "bn2", "sc2"));
  Rng rng(11);
  FillGaussian(reference->blob_by_name("data").get(), rng, 0.5f, 2.f);
  Blob<float>& label = *reference->blob_by_name("label");
  for (int i = 0; i < label.count(); ++i) label.mutable_cpu_data()[i] = float(i % 5);
  fused->blob_by_name("data")->CopyFrom(*reference->blob_by_name("data"));
  fused->blob_by_name("label")->CopyFrom(label);
  ASSERT_EQ(reference->learnable_params().size(), fused->learnable_params().size());
  for (std::size_t p = 0; p < fused->learnable_params().size(); ++p) {
    fused->learnable_params()[p]->CopyFrom(*reference->learnable_params()[p]);
  }
  for (int pass = 1; pass <= 2; ++pass) {
    const std::string when = "pass " + std::to_string(pass) + ": ";
    float loss[2];
    reference->Forward(&loss[0]);
    fused->Forward(&loss[1]);
    EXPECT_NEAR(loss[1], loss[0], 2e-4 * std::fabs(loss[0])) << when;
    reference->Backward();
    fused->Backward();
    ExpectNetsClose(*fused, *reference, when);
  }
  // The weights keep Caffe's layout: three BatchNorm blobs, the Scale's own two.
  NetParameter written;
  fused->ToProto(&written);
  for (const auto& layer : written.layer()) {
    if (layer.name() == "bn1") EXPECT_EQ(layer.blobs_size(), 3);
    if (layer.name() == "sc1") EXPECT_EQ(layer.blobs_size(), 2);
  }
}

// ResNet-50's res4 (1024 channels at 14x14 in the net, fewer here to keep the test short)
// and res2 shapes; GoogLeNet's 192 channels at 28x28 (Inception-v2 normalizes there).
TEST(CudnnBatchNormGpuTest, ResNetShapesEqualCaffeEngine) {
  DOPPIO_REQUIRE_GPU();
  CompareWithCaffeEngine({4, 256, 14});
  CompareWithCaffeEngine({2, 64, 56});
}

TEST(CudnnBatchNormGpuTest, GoogLeNetShapeEqualsCaffeEngine) {
  DOPPIO_REQUIRE_GPU();
  CompareWithCaffeEngine({2, 192, 28});
}

// A batch with one value per channel: cuDNN's unbiased variance has no meaning there; an
// error names the layer and the way out.
TEST(CudnnBatchNormGpuTest, OneValuePerChannelIsAnErrorNamingTheLayer) {
  DOPPIO_REQUIRE_GPU();
  const auto net = MakeNet({1, 8, 1}, "");
  try {
    net->Forward();
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("bn1"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("engine: CAFFE"), std::string::npos) << e.what();
  }
}

// A forward pass that starts between the fused BatchNorm and its Scale is refused.
TEST(CudnnBatchNormGpuTest, ForwardStartingAtAFusedScaleIsAnError) {
  DOPPIO_REQUIRE_GPU();
  const auto net = MakeNet({2, 16, 8}, "");
  net->Forward();
  int sc1 = -1;
  for (int i = 0; i < static_cast<int>(net->layer_names().size()); ++i) {
    if (net->layer_names()[i] == "sc1") sc1 = i;
  }
  ASSERT_GE(sc1, 0);
  EXPECT_THROW(net->ForwardFromTo(sc1, sc1), Error);
}

}  // namespace
}  // namespace doppio

#endif  // DOPPIO_WITH_CUDNN
