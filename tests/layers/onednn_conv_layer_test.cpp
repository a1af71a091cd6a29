// The ONEDNN Convolution against the CAFFE one on the shapes of Caffe's published nets, its
// gradients against finite differences, and its errors. Float throughout; the engines agree
// to 1e-4 relative (engine_comparison.hpp says relative to what).
#ifdef DOPPIO_WITH_ONEDNN

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>

#include "doppio/core/net.hpp"
#include "doppio/device/onednn.hpp"
#include "doppio/layers/onednn_conv_layer.hpp"
#include "engine_comparison.hpp"
#include "gradient_checker.hpp"
#include "test_util.hpp"

namespace doppio {
namespace {

std::string Conv(const std::string& fields) {
  return "type: 'Convolution' convolution_param { " + fields +
         " weight_filler { type: 'gaussian' } bias_filler { type: 'constant' value: 0.1 } "
         "engine: %ENGINE% }";
}

TEST(OnednnConvolutionTest, AlexNetGroupedConv2) {
  // conv2: 96 -> 256 channels in 2 groups, 5x5, pad 2 (channels and size scaled down).
  CompareEngines({Conv("num_output: 32 kernel_size: 5 pad: 2 group: 2"), {{2, 16, 13, 13}}});
}

TEST(OnednnConvolutionTest, AlexNetConv1Stride4) {
  CompareEngines({Conv("num_output: 16 kernel_size: 11 stride: 4"), {{2, 3, 35, 35}}});
}

TEST(OnednnConvolutionTest, GoogLeNet1x1) {
  CompareEngines({Conv("num_output: 24 kernel_size: 1"), {{2, 32, 14, 14}}});
}

TEST(OnednnConvolutionTest, GoogLeNet3x3) {
  CompareEngines({Conv("num_output: 24 kernel_size: 3 pad: 1"), {{2, 16, 14, 14}}});
}

TEST(OnednnConvolutionTest, GoogLeNet5x5) {
  CompareEngines({Conv("num_output: 8 kernel_size: 5 pad: 2"), {{2, 4, 14, 14}}});
}

TEST(OnednnConvolutionTest, GoogLeNetConv1Stride2Pad3) {
  CompareEngines({Conv("num_output: 16 kernel_size: 7 stride: 2 pad: 3"), {{1, 3, 31, 31}}});
}

TEST(OnednnConvolutionTest, ResNet50Stride2Projection1x1) {
  CompareEngines(
      {Conv("num_output: 32 kernel_size: 1 stride: 2 bias_term: false"), {{2, 16, 14, 14}}});
}

TEST(OnednnConvolutionTest, DilatedRectangularTwoBottoms) {
  CompareEngines({Conv("num_output: 6 kernel_h: 3 kernel_w: 2 stride_h: 2 stride_w: 1 pad_h: 2 "
                       "pad_w: 1 dilation: 2 group: 3"),
                  {{2, 6, 11, 9}, {2, 6, 11, 9}},
                  2});
}

TEST(OnednnConvolutionTest, ReshapeToAnotherBatch) {
  auto layer = LayerRegistry<float>::CreateLayer(
      EngineParam(Conv("num_output: 4 kernel_size: 3"), "ONEDNN"), Mode::CPU);
  Blob<float> bottom({2, 3, 6, 6}), top;
  layer->SetUp({&bottom}, {&top});
  bottom.Reshape({5, 3, 7, 6});
  Rng rng(3);
  FillGaussian(&bottom, rng);
  layer->Reshape({&bottom}, {&top});
  layer->Forward({&bottom}, {&top});
  EXPECT_EQ(top.shape(), (std::vector<int>{5, 4, 5, 4}));
  auto caffe = LayerRegistry<float>::CreateLayer(
      EngineParam(Conv("num_output: 4 kernel_size: 3"), "CAFFE"), Mode::CPU);
  Blob<float> caffe_top;
  caffe->SetUp({&bottom}, {&caffe_top});
  for (int p = 0; p < 2; ++p) caffe->blobs()[p]->CopyFrom(*layer->blobs()[p]);
  caffe->Forward({&bottom}, {&caffe_top});
  ExpectClose(top.cpu_data(), caffe_top.cpu_data(), top.count(), 1e-4, "top");
}

TEST(OnednnConvolutionTest, GradientGroupedStridedDilated) {
  Rng rng(5);
  Blob<float> bottom({2, 4, 6, 5}), top;
  FillGaussian(&bottom, rng);
  auto layer = LayerRegistry<float>::CreateLayer(
      EngineParam(Conv("num_output: 4 kernel_size: 2 stride: 2 pad: 1 dilation: 2 group: 2"),
                  "ONEDNN"),
      Mode::CPU);
  GradientChecker<float> checker(1e-2, 1e-2);
  checker.CheckGradientExhaustive(layer.get(), {&bottom}, {&top});
}

// Whether this machine's oneDNN has a Winograd kernel for a 3x3, pad-1 convolution of
// `channels` to `channels` over {2, channels, 14, 14}.
bool OnednnHasWinograd(int channels) {
  const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  const auto any = [](const dnnl::memory::dims& dims) {
    return dnnl::memory::desc(dims, dnnl::memory::data_type::f32, dnnl::memory::format_tag::any);
  };
  try {
    const dnnl::convolution_forward::primitive_desc pd(
        dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training,
                                        dnnl::algorithm::convolution_winograd,
                                        any({2, channels, 14, 14}), any({channels, channels, 3, 3}),
                                        any({2, channels, 14, 14}), {1, 1}, {1, 1}, {1, 1}),
        engine);
    return std::string(pd.impl_info_str()).find("wino") != std::string::npos;
  } catch (const dnnl::error&) {
    return false;
  }
}

TEST(OnednnConvolutionTest, ResNet50Winograd3x3) {
  // ResNet-50's 3x3 convolutions (channels scaled down): Winograd where oneDNN has a kernel,
  // which rounds differently from the direct algorithm: 1e-3 relative.
  EngineComparison c{Conv("num_output: 32 kernel_size: 3 pad: 1 bias_term: false"),
                     {{2, 32, 14, 14}}};
  c.tolerance = 1e-3;
  CompareEngines(c);
  c.text = Conv("num_output: 16 kernel_size: 3 pad: 1");
  c.bottoms = {{3, 16, 7, 7}};
  CompareEngines(c);
}

TEST(OnednnConvolutionTest, WinogradWhereOnednnHasItUnlessTurnedOff) {
  const bool available = OnednnHasWinograd(32);
  for (const bool allowed : {true, false}) {
    auto layer = LayerRegistry<float>::CreateLayer(
        EngineParam(Conv("num_output: 32 kernel_size: 3 pad: 1"), "ONEDNN"), Mode::CPU);
    CpuOptions options;
    options.onednn_winograd = allowed;
    layer->set_cpu_options(options);
    Blob<float> bottom({2, 32, 14, 14}), top;
    layer->SetUp({&bottom}, {&top});
    const auto* conv = dynamic_cast<const OnednnConvolutionLayer*>(layer.get());
    ASSERT_NE(conv, nullptr);
    EXPECT_EQ(conv->winograd(), allowed && available) << "allowed " << allowed;
  }
  // Strided, grouped or 1x1: always the direct algorithm.
  for (const std::string& fields :
       {"num_output: 32 kernel_size: 3 pad: 1 stride: 2", "num_output: 32 kernel_size: 3 group: 2",
        "num_output: 32 kernel_size: 1"}) {
    auto layer = LayerRegistry<float>::CreateLayer(EngineParam(Conv(fields), "ONEDNN"), Mode::CPU);
    Blob<float> bottom({2, 32, 14, 14}), top;
    layer->SetUp({&bottom}, {&top});
    EXPECT_FALSE(dynamic_cast<const OnednnConvolutionLayer&>(*layer).winograd()) << fields;
  }
}

TEST(OnednnConvolutionTest, TheNetsCpuOptionsTurnWinogradOff) {
  if (!OnednnHasWinograd(32)) GTEST_SKIP() << "no Winograd kernel in this machine's oneDNN";
  NetParameter param = ParseText<NetParameter>(
      "layer { name: 'in' type: 'Input' top: 'x' input_param { shape { dim: 2 dim: 32 dim: 14 "
      "dim: 14 } } }");
  LayerParameter& conv = *param.add_layer();
  conv = EngineParam(Conv("num_output: 32 kernel_size: 3 pad: 1"), "ONEDNN");
  conv.add_bottom("x");
  conv.add_top("y");
  for (const bool allowed : {true, false}) {
    CpuOptions options;
    options.onednn_winograd = allowed;
    Net<float> net(param, 1701, nullptr, options);
    const auto& layer = dynamic_cast<const OnednnConvolutionLayer&>(*net.layer_by_name("l"));
    EXPECT_EQ(layer.winograd(), allowed);
  }
}

TEST(OnednnConvolutionTest, WinogradOverItsScratchpadLimitRunsDirect) {
  if (!OnednnHasWinograd(32)) GTEST_SKIP() << "no Winograd kernel in this machine's oneDNN";
  Blob<float> bottom({2, 32, 14, 14});
  Rng rng(3);
  FillGaussian(&bottom, rng);
  const auto make = [&](Blob<float>* top, bool winograd) {
    auto layer = LayerRegistry<float>::CreateLayer(
        EngineParam(Conv("num_output: 32 kernel_size: 3 pad: 1"), "ONEDNN"), Mode::CPU);
    CpuOptions options;
    options.onednn_winograd = winograd;
    layer->set_cpu_options(options);
    layer->SetUp({&bottom}, {top});
    return layer;
  };
  Blob<float> top, direct_top;
  auto layer = make(&top, true);
  auto& conv = dynamic_cast<OnednnConvolutionLayer&>(*layer);
  ASSERT_TRUE(conv.winograd());
  const std::size_t scratchpad = conv.winograd_scratchpad_bytes();
  EXPECT_GT(scratchpad, 0u);
  conv.LimitWinograd(scratchpad);
  EXPECT_TRUE(conv.winograd()) << "a scratchpad at the limit is allowed";
  conv.LimitWinograd(scratchpad - 1);
  EXPECT_FALSE(conv.winograd());
  layer->Forward({&bottom}, {&top});

  auto direct = make(&direct_top, false);
  direct->blobs()[0]->CopyFrom(*layer->blobs()[0]);
  direct->blobs()[1]->CopyFrom(*layer->blobs()[1]);
  direct->Forward({&bottom}, {&direct_top});
  for (int i = 0; i < top.count(); ++i) {
    ASSERT_NEAR(top.cpu_data()[i], direct_top.cpu_data()[i], 1e-5) << i;
  }
}

TEST(OnednnConvolutionTest, NetAllowsWinogradScratchpadsOfAFiftiethOfItsMemoryOr16MiB) {
  if (!OnednnHasWinograd(32)) GTEST_SKIP() << "no Winograd kernel in this machine's oneDNN";
  // AlexNet's conv3 at batch 8: a scratchpad of about 31 MiB for a net of about 11 MiB.
  const auto net_with = [](int num, int channels, int outputs, int size) {
    NetParameter param = ParseText<NetParameter>(
        "layer { name: 'in' type: 'Input' top: 'x' input_param { shape { dim: " +
        std::to_string(num) + " dim: " + std::to_string(channels) +
        " dim: " + std::to_string(size) + " dim: " + std::to_string(size) +
        " } } }\n"
        "layer { name: 'conv' type: 'Convolution' bottom: 'x' top: 'y' convolution_param { "
        "num_output: " +
        std::to_string(outputs) + " kernel_size: 3 pad: 1 engine: ONEDNN } }\n");
    param.mutable_state()->set_phase(TRAIN);
    return std::make_unique<Net<float>>(param);
  };
  const auto conv_of = [](const Net<float>& net) {
    return dynamic_cast<const OnednnConvolutionLayer*>(net.layer_by_name("conv").get());
  };
  const auto small = net_with(2, 32, 32, 14);
  EXPECT_TRUE(conv_of(*small)->winograd());
  const auto large = net_with(8, 256, 384, 13);
  const OnednnConvolutionLayer* conv = conv_of(*large);
  const std::size_t limit = std::max<std::size_t>(
      (large->parameter_bytes() + large->activation_bytes()) / 50, std::size_t{16} << 20);
  if (conv->winograd_scratchpad_bytes() <= limit) {
    GTEST_SKIP() << "this machine's Winograd kernel takes " << conv->winograd_scratchpad_bytes()
                 << " bytes for the shape, within the net's " << limit;
  }
  EXPECT_FALSE(conv->winograd());
}

TEST(OnednnConvolutionTest, DoubleIsRefusedByName) {
  ExpectError(
      [] {
        LayerRegistry<double>::CreateLayer(
            EngineParam(Conv("num_output: 4 kernel_size: 3"), "ONEDNN"), Mode::CPU);
      },
      {"layer 'l' (Convolution)", "engine ONEDNN", "float only"});
  EXPECT_EQ(LayerRegistry<double>::ChooseEngine(
                EngineParam(Conv("num_output: 4 kernel_size: 3"), "DEFAULT"), Mode::CPU),
            "CAFFE");
}

TEST(OnednnConvolutionTest, ChannelAxisOtherThanOneIsRefused) {
  ExpectError(
      [] {
        LayerRegistry<float>::CreateLayer(
            EngineParam(Conv("num_output: 4 kernel_size: 3 axis: 2"), "ONEDNN"), Mode::CPU);
      },
      {"layer 'l' (Convolution)", "engine ONEDNN", "axis 1"});
}

TEST(OnednnConvolutionTest, NonImageBottomIsAnErrorNamingTheLayer) {
  const std::string net = R"(
    name: 'n'
    layer { name: 'in' type: 'Input' top: 'x' input_param { shape { dim: 2 dim: 3 dim: 8 } } }
    layer { name: 'conv' type: 'Convolution' bottom: 'x' top: 'y'
            convolution_param { num_output: 2 kernel_size: 3 engine: ONEDNN } })";
  ExpectError([&] { Net<float>(ParseText<NetParameter>(net), 1); }, {"layer 'conv' (Convolution)"});
}

TEST(OnednnConvolutionTest, OnednnStatusBecomesAnErrorNamingLayerAndPrimitive) {
  // Dimensions that disagree: oneDNN refuses the descriptor with invalid_arguments.
  ExpectError(
      [] {
        OnednnCall("layer 'conv9' (Convolution)", "convolution forward", [] {
          const dnnl::memory::desc src({1, 3, 8, 8}, dnnl::memory::data_type::f32,
                                       dnnl::memory::format_tag::nchw);
          const dnnl::memory::desc weights({4, 5, 3, 3}, dnnl::memory::data_type::f32,
                                           dnnl::memory::format_tag::oihw);
          const dnnl::memory::desc dst({1, 4, 6, 6}, dnnl::memory::data_type::f32,
                                       dnnl::memory::format_tag::nchw);
          dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training,
                                          dnnl::algorithm::convolution_direct, src, weights, dst,
                                          {1, 1}, {0, 0}, {0, 0});
        });
      },
      {"layer 'conv9' (Convolution)", "oneDNN convolution forward", "invalid_arguments"});
}

}  // namespace
}  // namespace doppio

#endif  // DOPPIO_WITH_ONEDNN
