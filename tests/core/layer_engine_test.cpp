// Which engine the registry picks for a mode, and what a GPU-mode layer does where no GPU is
// set up. None of this needs a device.
#include <gtest/gtest.h>

#include "doppio/core/layer_registry.hpp"
#include "test_util.hpp"

namespace doppio {
namespace {

LayerParameter Param(const std::string& text) {
  return ParseText<LayerParameter>("name: 'l' " + text);
}

const char* kConv = "type: 'Convolution' convolution_param { num_output: 16 kernel_size: 1 }";

// A type of this test only: CAFFE, and an ONEDNN engine that can run every configuration but
// prefers those whose num_output is even.
std::shared_ptr<Layer<float>> NoLayer(const LayerParameter&) { return nullptr; }
std::string OddOutputs(const LayerParameter& param) {
  return param.convolution_param().num_output() % 2 ? "odd" : "";
}
const LayerRegisterer<float> g_caffe("TestPreference", NoLayer, LayerTraits());
const LayerRegisterer<float> g_onednn("TestPreference", "ONEDNN", NoLayer, nullptr, OddOutputs);

TEST(LayerEngineTest, DefaultTakesThePreferredEngineAndANamedOneIsGiven) {
  const auto engine = [](const std::string& conv) {
    return LayerRegistry<float>::ChooseEngine(
        Param("type: 'TestPreference' convolution_param { " + conv + " }"), Mode::CPU);
  };
  EXPECT_EQ(engine("num_output: 2"), "ONEDNN");
  EXPECT_EQ(engine("num_output: 3"), "CAFFE");
  EXPECT_EQ(engine("num_output: 3 engine: ONEDNN"), "ONEDNN");
  EXPECT_EQ(engine("num_output: 2 engine: CAFFE"), "CAFFE");
}

#ifdef DOPPIO_WITH_ONEDNN
TEST(LayerEngineTest, CpuModePrefersOnednnWhereItApplies) {
  EXPECT_EQ(LayerRegistry<float>::ChooseEngine(Param(kConv), Mode::CPU), "ONEDNN");
  EXPECT_EQ(LayerRegistry<float>::ChooseEngine(Param("type: 'ReLU'"), Mode::CPU), "ONEDNN");
  // Types without a oneDNN engine, configurations it cannot run, and double precision.
  EXPECT_EQ(LayerRegistry<float>::ChooseEngine(Param("type: 'Sigmoid'"), Mode::CPU), "CAFFE");
  EXPECT_EQ(LayerRegistry<float>::ChooseEngine(
                Param("type: 'Eltwise' eltwise_param { operation: PROD }"), Mode::CPU),
            "CAFFE");
  EXPECT_EQ(
      LayerRegistry<float>::ChooseEngine(
          Param("type: 'Pooling' pooling_param { pool: STOCHASTIC kernel_size: 2 }"), Mode::CPU),
      "CAFFE");
  EXPECT_EQ(LayerRegistry<double>::ChooseEngine(Param(kConv), Mode::CPU), "CAFFE");
  // Convolutions whose output channels per group oneDNN would pad (LeNet's 20 and 50) stay on
  // CAFFE unless asked; groups count per group.
  const std::string conv20 =
      "type: 'Convolution' convolution_param { num_output: 20 kernel_size: 5";
  EXPECT_EQ(LayerRegistry<float>::ChooseEngine(Param(conv20 + " }"), Mode::CPU), "CAFFE");
  EXPECT_EQ(LayerRegistry<float>::ChooseEngine(Param(conv20 + " engine: ONEDNN }"), Mode::CPU),
            "ONEDNN");
  EXPECT_EQ(LayerRegistry<float>::ChooseEngine(
                Param("type: 'Convolution' convolution_param { num_output: 96 group: 2 "
                      "kernel_size: 3 }"),
                Mode::CPU),
            "ONEDNN");
  EXPECT_EQ(LayerRegistry<float>::ChooseEngine(
                Param("type: 'Convolution' convolution_param { num_output: 40 group: 2 "
                      "kernel_size: 3 }"),
                Mode::CPU),
            "CAFFE");
  // LRN runs on oneDNN where oneDNN 2.6 has jit kernels for it (AlexNet's and GoogLeNet's
  // across-channel window of 5), and stays on CAFFE where it has only its plain C++ one (a
  // within-channel window of 7), unless asked.
  EXPECT_EQ(LayerRegistry<float>::ChooseEngine(Param("type: 'LRN'"), Mode::CPU), "ONEDNN");
  const std::string within7 = "type: 'LRN' lrn_param { norm_region: WITHIN_CHANNEL local_size: 7";
  EXPECT_EQ(LayerRegistry<float>::ChooseEngine(Param(within7 + " }"), Mode::CPU), "CAFFE");
  EXPECT_EQ(LayerRegistry<float>::ChooseEngine(Param(within7 + " engine: ONEDNN }"), Mode::CPU),
            "ONEDNN");
  EXPECT_EQ(LayerRegistry<float>::ChooseEngine(Param("type: 'LRN' lrn_param { engine: ONEDNN }"),
                                               Mode::CPU),
            "ONEDNN");
}
#else
TEST(LayerEngineTest, CpuModeDefaultsToCaffe) {
  EXPECT_EQ(LayerRegistry<float>::ChooseEngine(Param(kConv), Mode::CPU), "CAFFE");
  EXPECT_EQ(LayerRegistry<float>::ChooseEngine(Param("type: 'ReLU'"), Mode::CPU), "CAFFE");
}
#endif

TEST(LayerEngineTest, ExplicitCaffeOrCudnnOnTheCpuGetsCaffe) {
  EXPECT_EQ(LayerRegistry<float>::ChooseEngine(
                Param("type: 'Convolution' convolution_param { num_output: 2 kernel_size: 1 "
                      "engine: CAFFE }"),
                Mode::CPU),
            "CAFFE");
  EXPECT_EQ(LayerRegistry<float>::ChooseEngine(Param("type: 'ReLU' relu_param { engine: CUDNN }"),
                                               Mode::CPU),
            "CAFFE");
  EXPECT_EQ(LayerRegistry<float>::ChooseEngine(
                Param("type: 'Pooling' pooling_param { kernel_size: 2 engine: CUDNN }"), Mode::CPU),
            "CAFFE");
}

TEST(LayerEngineTest, ExplicitCaffeOnTheGpu) {
  EXPECT_EQ(LayerRegistry<float>::ChooseEngine(Param("type: 'ReLU' relu_param { engine: CAFFE }"),
                                               Mode::GPU),
            "CAFFE");
}

#ifdef DOPPIO_WITH_CUDNN
TEST(LayerEngineTest, GpuModePrefersCudnnWhereItApplies) {
  EXPECT_EQ(LayerRegistry<float>::ChooseEngine(Param(kConv), Mode::GPU), "CUDNN");
  EXPECT_EQ(LayerRegistry<double>::ChooseEngine(Param("type: 'Softmax'"), Mode::GPU), "CUDNN");
  EXPECT_EQ(LayerRegistry<float>::ChooseEngine(Param("type: 'TanH'"), Mode::GPU), "CUDNN");
  EXPECT_EQ(LayerRegistry<float>::ChooseEngine(
                Param("type: 'Pooling' pooling_param { pool: AVE kernel_size: 2 }"), Mode::GPU),
            "CUDNN");
  EXPECT_EQ(LayerRegistry<float>::ChooseEngine(Param("type: 'LRN'"), Mode::GPU), "CUDNN");
  EXPECT_EQ(LayerRegistry<float>::ChooseEngine(Param("type: 'BatchNorm'"), Mode::GPU), "CUDNN");
  EXPECT_EQ(LayerRegistry<double>::ChooseEngine(Param("type: 'Scale'"), Mode::GPU), "CUDNN");
  EXPECT_EQ(LayerRegistry<float>::ChooseEngine(
                Param("type: 'BatchNorm' batch_norm_param { engine: CAFFE }"), Mode::GPU),
            "CAFFE");
  // Types without a cuDNN engine, and configurations cuDNN cannot run.
  EXPECT_EQ(LayerRegistry<float>::ChooseEngine(Param("type: 'Deconvolution'"), Mode::GPU), "CAFFE");
  EXPECT_EQ(LayerRegistry<float>::ChooseEngine(
                Param("type: 'ReLU' relu_param { negative_slope: 0.1 }"), Mode::GPU),
            "CAFFE");
  EXPECT_EQ(
      LayerRegistry<float>::ChooseEngine(
          Param("type: 'Pooling' pooling_param { pool: STOCHASTIC kernel_size: 2 }"), Mode::GPU),
      "CAFFE");
  EXPECT_EQ(LayerRegistry<float>::ChooseEngine(
                Param("type: 'Pooling' top: 'out' top: 'mask' pooling_param { kernel_size: 2 }"),
                Mode::GPU),
            "CAFFE");
  EXPECT_EQ(LayerRegistry<float>::ChooseEngine(
                Param("type: 'LRN' lrn_param { norm_region: WITHIN_CHANNEL }"), Mode::GPU),
            "CAFFE");
  EXPECT_EQ(LayerRegistry<float>::ChooseEngine(Param("type: 'LRN' lrn_param { local_size: 17 }"),
                                               Mode::GPU),
            "CAFFE");
}

TEST(LayerEngineTest, ExplicitCudnnThatCannotRunIsAnError) {
  ExpectError(
      [] {
        LayerRegistry<float>::CreateLayer(
            Param("type: 'Pooling' pooling_param { pool: STOCHASTIC kernel_size: 2 engine: "
                  "CUDNN }"),
            Mode::GPU);
      },
      {"layer 'l' (Pooling)", "engine CUDNN", "stochastic"});
}

TEST(LayerEngineTest, GpuModeCreatesTheCudnnClassWithoutTouchingTheDevice) {
  // Construction only reads the parameters; cuDNN is first called in Forward.
  auto layer = LayerRegistry<float>::CreateLayer(Param(kConv), Mode::GPU);
  EXPECT_STREQ(layer->type(), "Convolution");
}
#else
TEST(LayerEngineTest, WithoutCudnnTheGpuGetsCaffe) {
  EXPECT_EQ(LayerRegistry<float>::ChooseEngine(Param(kConv), Mode::GPU), "CAFFE");
  ExpectError(
      [] {
        LayerRegistry<float>::CreateLayer(Param("type: 'ReLU' relu_param { engine: CUDNN }"),
                                          Mode::GPU);
      },
      {"layer 'l' (ReLU)", "engine CUDNN", "does not provide"});
}
#endif

#ifdef DOPPIO_WITH_ONEDNN
TEST(LayerEngineTest, ExplicitOnednnOnTheCpu) {
  const auto layer = LayerRegistry<float>::CreateLayer(
      Param("type: 'Convolution' convolution_param { num_output: 2 kernel_size: 1 engine: ONEDNN "
            "}"),
      Mode::CPU);
  EXPECT_EQ(layer->engine(), "ONEDNN");
  // oneDNN has no GPU code: on the GPU the layer runs Doppio's own kernels.
  EXPECT_EQ(LayerRegistry<float>::ChooseEngine(
                Param("type: 'Convolution' convolution_param { num_output: 2 kernel_size: 1 "
                      "engine: ONEDNN }"),
                Mode::GPU),
            "CAFFE");
}

TEST(LayerEngineTest, ExplicitOnednnForATypeItLacksIsAnError) {
  ExpectError(
      [] {
        LayerRegistry<float>::CreateLayer(Param("type: 'Sigmoid' sigmoid_param { engine: ONEDNN }"),
                                          Mode::CPU);
      },
      {"layer 'l' (Sigmoid)", "engine ONEDNN", "has no Sigmoid layer"});
}
#else
TEST(LayerEngineTest, WithoutOnednnExplicitOnednnIsAnError) {
  ExpectError(
      [] {
        LayerRegistry<float>::CreateLayer(
            Param("type: 'Convolution' convolution_param { num_output: 2 kernel_size: 1 engine: "
                  "ONEDNN }"),
            Mode::CPU);
      },
      {"layer 'l' (Convolution)", "engine ONEDNN", "no oneDNN", "libdnnl-dev"});
}
#endif

TEST(LayerEngineTest, RegistryRecordsTheEngineOnTheLayer) {
  const auto layer = LayerRegistry<float>::CreateLayer(
      Param("type: 'ReLU' relu_param { engine: CAFFE }"), Mode::CPU);
  EXPECT_EQ(layer->engine(), "CAFFE");
}

TEST(LayerEngineTest, GpuModeWithoutAContextIsAnError) {
  auto layer = LayerRegistry<float>::CreateLayer(Param("type: 'ReLU'"), Mode::CPU);
  Blob<float> bottom({2, 3}), top;
  layer->SetUp({&bottom}, {&top});
  layer->set_mode(Mode::GPU);
#ifdef DOPPIO_WITH_CUDA
  ExpectError([&] { layer->Forward({&bottom}, {&top}); }, {"layer 'l' (ReLU)", "no GPU context"});
#else
  ExpectError([&] { layer->Forward({&bottom}, {&top}); }, {"layer 'l' (ReLU)", "no GPU support"});
#endif
}

TEST(LayerEngineTest, GpuContextWithoutADeviceIsAClearError) {
  if (GpuDeviceCount() > 0) GTEST_SKIP() << "a GPU is present";
  ExpectError([] { GpuContext::Create(0); }, {"GPU 0 requested", "without --gpu"});
}

}  // namespace
}  // namespace doppio
