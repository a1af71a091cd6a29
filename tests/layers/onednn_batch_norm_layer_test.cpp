// The ONEDNN BatchNorm against the CAFFE one on ResNet-50's shapes (batch statistics with the
// running sums they update, use_global_stats, 2-d inputs, in place), its gradient against
// finite differences, and ResNet-50's in-place BatchNorm + Scale + ReLU block as a net on
// both engines. Float; 1e-4 relative, as engine_comparison.hpp defines it. About 1 s.
#ifdef DOPPIO_WITH_ONEDNN

#include <gtest/gtest.h>

#include <string>

#include "doppio/core/net.hpp"
#include "doppio/layers/onednn_batch_norm_layer.hpp"
#include "engine_comparison.hpp"
#include "engine_override.hpp"
#include "gradient_checker.hpp"
#include "test_util.hpp"

namespace doppio {
namespace {

std::string BatchNorm(const std::string& fields) {
  return "type: 'BatchNorm' batch_norm_param { " + fields + " engine: %ENGINE% }";
}

TEST(OnednnBatchNormTest, ResNet50BatchStatisticsAndRunningSums) {
  // Forward twice: the running sums and the factor agree after each update.
  CompareEngines({BatchNorm(""), {{4, 16, 14, 14}}, 1, 1e-4, "CAFFE", "ONEDNN", true});
}

TEST(OnednnBatchNormTest, MovingAverageFractionAndEps) {
  CompareEngines({BatchNorm("moving_average_fraction: 0.9 eps: 0.001"),
                  {{2, 8, 7, 7}},
                  1,
                  1e-4,
                  "CAFFE",
                  "ONEDNN",
                  true});
}

TEST(OnednnBatchNormTest, ResNet50GlobalStatistics) {
  CompareEngines(
      {BatchNorm("use_global_stats: true"), {{2, 16, 7, 7}}, 1, 1e-4, "CAFFE", "ONEDNN", true});
}

TEST(OnednnBatchNormTest, TwoDimensionalAndThreeDimensionalInputs) {
  CompareEngines({BatchNorm(""), {{16, 10}}, 1, 1e-4, "CAFFE", "ONEDNN", true});
  CompareEngines({BatchNorm(""), {{3, 5, 6}}, 1, 1e-4, "CAFFE", "ONEDNN", true});
}

TEST(OnednnBatchNormTest, InPlaceMatchesCaffe) {
  for (const char* fields : {"", "use_global_stats: true"}) {
    const std::string text = BatchNorm(fields);
    Rng rng(23);
    Blob<float> blob[2];
    std::shared_ptr<Layer<float>> layer[2];
    blob[0].Reshape({3, 6, 5, 4});
    FillGaussian(&blob[0], rng, 1.f, 2.f);
    blob[1].CopyFrom(blob[0], false, true);
    for (int e = 0; e < 2; ++e) {
      layer[e] = LayerRegistry<float>::CreateLayer(EngineParam(text, e == 0 ? "CAFFE" : "ONEDNN"),
                                                   Mode::CPU);
      layer[e]->SetUp({&blob[e]}, {&blob[e]});
    }
    for (int p = 0; p < 3; ++p) {
      FillUniform(layer[0]->blobs()[p].get(), rng, 0.5f, 2.f);
      layer[1]->blobs()[p]->CopyFrom(*layer[0]->blobs()[p]);
    }
    for (int e = 0; e < 2; ++e) layer[e]->Forward({&blob[e]}, {&blob[e]});
    rng_gaussian<float>(blob[0].count(), 0.f, 1.f, rng, blob[0].mutable_cpu_diff());
    blob[1].CopyFrom(blob[0], true);
    for (int e = 0; e < 2; ++e) layer[e]->Backward({&blob[e]}, {true}, {&blob[e]});
    ExpectClose(blob[1].cpu_data(), blob[0].cpu_data(), blob[0].count(), 1e-4, "data");
    ExpectClose(blob[1].cpu_diff(), blob[0].cpu_diff(), blob[0].count(), 1e-4, "diff");
  }
}

TEST(OnednnBatchNormTest, GradientBatchStatistics) {
  Rng rng(29);
  Blob<float> bottom({3, 2, 2, 2}), top;
  FillGaussian(&bottom, rng, 0.5f, 2.f);
  auto layer = LayerRegistry<float>::CreateLayer(
      EngineParam("phase: TRAIN " + BatchNorm(""), "ONEDNN"), Mode::CPU);
  ASSERT_EQ(layer->engine(), "ONEDNN");
  GradientChecker<float> checker(1e-2, 1e-3);
  checker.CheckGradientExhaustive(layer.get(), {&bottom}, {&top});
}

// ResNet-50's conv -> BatchNorm -> Scale -> ReLU, the last three in place, as a net: on
// CAFFE the in-place Scale reads BatchNorm's kept output; on ONEDNN the three are fused into
// one primitive (onednn_fusion.cpp). In TRAIN (batch statistics) and TEST (the stored ones:
// there every parameter is drawn from [0.5, 2]).
TEST(OnednnBatchNormTest, ResNetBlockInPlaceNetMatchesCaffe) {
  NetParameter param = ParseText<NetParameter>(R"(
    name: 'block' force_backward: true state { phase: TRAIN }
    layer { name: 'in' type: 'Input' top: 'x' top: 'target'
            input_param { shape { dim: 2 dim: 3 dim: 9 dim: 9 } shape { dim: 2 dim: 8 } } }
    layer { name: 'conv' type: 'Convolution' bottom: 'x' top: 'c'
            convolution_param { num_output: 8 kernel_size: 3 pad: 1 bias_term: false
                                weight_filler { type: 'msra' } } }
    layer { name: 'bn' type: 'BatchNorm' bottom: 'c' top: 'c' }
    layer { name: 'scale' type: 'Scale' bottom: 'c' top: 'c'
            scale_param { bias_term: true filler { type: 'uniform' min: 0.5 max: 2 }
                          bias_filler { type: 'gaussian' } } }
    layer { name: 'relu' type: 'ReLU' bottom: 'c' top: 'c' }
    layer { name: 'pool' type: 'Pooling' bottom: 'c' top: 'p'
            pooling_param { pool: AVE global_pooling: true } }
    layer { name: 'flat' type: 'Flatten' bottom: 'p' top: 'f' }
    layer { name: 'loss' type: 'EuclideanLoss' bottom: 'f' bottom: 'target' top: 'loss' })");
  for (const Phase phase : {TRAIN, TEST}) {
    param.mutable_state()->set_phase(phase);
    Net<float> caffe(WithEngine(param, "CAFFE"));
    Net<float> onednn(WithEngine(param, "ONEDNN"));
    int onednn_layers = 0;
    for (const auto& layer : onednn.layers()) onednn_layers += layer->engine() == "ONEDNN";
    EXPECT_EQ(onednn_layers, 5);  // conv, bn, scale, relu, pool
    const auto* bn = dynamic_cast<const OnednnBatchNormLayer*>(onednn.layer_by_name("bn").get());
    ASSERT_NE(bn, nullptr);
    EXPECT_TRUE(bn->fused());
    Rng rng(31);
    for (const char* input : {"x", "target"}) {
      FillGaussian(caffe.blob_by_name(input).get(), rng);
      onednn.blob_by_name(input)->CopyFrom(*caffe.blob_by_name(input));
    }
    for (std::size_t p = 0; p < caffe.params().size(); ++p) {
      if (phase == TEST) FillUniform(caffe.params()[p].get(), rng, 0.5f, 2.f);
      onednn.params()[p]->CopyFrom(*caffe.params()[p]);
    }
    for (int iteration = 0; iteration < 2; ++iteration) {
      const float want = caffe.ForwardBackward();
      const float got = onednn.ForwardBackward();
      EXPECT_NEAR(got, want, 1e-4 * std::fabs(want));
      for (std::size_t p = 0; p < caffe.params().size(); ++p) {
        const Blob<float>& a = *caffe.params()[p];
        const Blob<float>& b = *onednn.params()[p];
        ExpectClose(b.cpu_data(), a.cpu_data(), a.count(), 1e-4, "param " + std::to_string(p));
        ExpectClose(b.cpu_diff(), a.cpu_diff(), a.count(), 1e-4, "param diff " + std::to_string(p));
      }
      ExpectClose(onednn.blob_by_name("x")->cpu_diff(), caffe.blob_by_name("x")->cpu_diff(),
                  caffe.blob_by_name("x")->count(), 1e-4, "input diff");
    }
  }
}

}  // namespace
}  // namespace doppio

#endif  // DOPPIO_WITH_ONEDNN
