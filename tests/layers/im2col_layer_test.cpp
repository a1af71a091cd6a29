#include "doppio/layers/im2col_layer.hpp"

#include <gtest/gtest.h>

#include "doppio/core/layer_registry.hpp"
#include "gradient_checker.hpp"
#include "test_util.hpp"

namespace doppio {

template <typename Dtype>
class Im2colLayerTest : public ::testing::Test {};
TYPED_TEST_SUITE(Im2colLayerTest, TestDtypes);

TYPED_TEST(Im2colLayerTest, ForwardBackwardHandComputed) {
  using Dtype = TypeParam;
  Im2colLayer<Dtype> layer(
      ParseText<LayerParameter>("name: 'i' type: 'Im2col' convolution_param { kernel_size: 2 }"));
  Blob<Dtype> bottom({1, 1, 3, 3}), top;
  SetValues(&bottom, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  layer.SetUp({&bottom}, {&top});
  EXPECT_EQ(top.shape(), (std::vector<int>{1, 4, 2, 2}));
  layer.Forward({&bottom}, {&top});
  // One channel per kernel tap, (0,0) (0,1) (1,0) (1,1), over the 2x2 window positions.
  ExpectValues(top, {1, 2, 4, 5, 2, 3, 5, 6, 4, 5, 7, 8, 5, 6, 8, 9});
  for (int i = 0; i < top.count(); ++i) top.mutable_cpu_diff()[i] = 1;
  layer.Backward({&top}, {true}, {&bottom});
  // How many windows read each pixel.
  ExpectValues(bottom, {1, 2, 1, 2, 4, 2, 1, 2, 1}, true);
}

TYPED_TEST(Im2colLayerTest, ShapeWithStridePadDilation) {
  using Dtype = TypeParam;
  Im2colLayer<Dtype> layer(ParseText<LayerParameter>(
      "name: 'i' type: 'Im2col' convolution_param { kernel_h: 3 kernel_w: 2 stride: 2 pad: 1 "
      "dilation: 2 }"));
  Blob<Dtype> bottom({2, 3, 7, 6}), top;
  layer.SetUp({&bottom}, {&top});
  // (7 + 2 - 5) / 2 + 1 = 3 rows, (6 + 2 - 3) / 2 + 1 = 3 columns.
  EXPECT_EQ(top.shape(), (std::vector<int>{2, 18, 3, 3}));
}

TYPED_TEST(Im2colLayerTest, Gradient) {
  using Dtype = TypeParam;
  Im2colLayer<Dtype> layer(ParseText<LayerParameter>(
      "name: 'i' type: 'Im2col' convolution_param { kernel_size: 3 stride: 2 pad: 1 "
      "dilation: 1 }"));
  Rng rng(11);
  Blob<Dtype> bottom({2, 2, 5, 4}), top;
  FillGaussian<Dtype>(&bottom, rng);
  GradientChecker<Dtype> checker(1e-3, 1e-3);
  checker.CheckGradientExhaustive(&layer, {&bottom}, {&top});
}

TEST(Im2colLayerErrorTest, BadParametersNameTheLayerAndField) {
  Blob<float> bottom({1, 2, 3, 3}), top;
  const auto setup = [&](const std::string& conv) {
    auto layer = LayerRegistry<float>::CreateLayer(
        ParseText<LayerParameter>("name: 'i' type: 'Im2col' " + conv));
    layer->SetUp({&bottom}, {&top});
  };
  ExpectError([&] { setup(""); }, {"layer 'i' (Im2col)", "convolution_param.kernel_size"});
  ExpectError([&] { setup("convolution_param { kernel_size: 5 }"); },
              {"layer 'i' (Im2col)", "smaller than the 5x5 kernel"});
  ExpectError([&] { setup("convolution_param { kernel_size: 2 force_nd_im2col: true }"); },
              {"layer 'i' (Im2col)", "convolution_param.force_nd_im2col"});
  ExpectError([&] { setup("convolution_param { kernel_size: 2 stride: 0 }"); },
              {"layer 'i' (Im2col)", "stride must be positive"});
}

}  // namespace doppio
