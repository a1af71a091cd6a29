#include "doppio/layers/parameter_layer.hpp"

#include <gtest/gtest.h>

#include "doppio/core/layer_registry.hpp"
#include "doppio/core/net.hpp"
#include "gradient_checker.hpp"
#include "test_util.hpp"

namespace doppio {

template <typename Dtype>
class ParameterLayerTest : public ::testing::Test {};
TYPED_TEST_SUITE(ParameterLayerTest, TestDtypes);

TYPED_TEST(ParameterLayerTest, TopIsTheBlobAndGradientsAccumulate) {
  using Dtype = TypeParam;
  ParameterLayer<Dtype> layer(ParseText<LayerParameter>(
      "name: 'p' type: 'Parameter' parameter_param { shape { dim: 2 dim: 3 } }"));
  Blob<Dtype> top;
  layer.SetUp({}, {&top});
  ASSERT_EQ(layer.blobs().size(), 1u);
  EXPECT_EQ(top.shape(), (std::vector<int>{2, 3}));
  ExpectValues(*layer.blobs()[0], {0, 0, 0, 0, 0, 0});  // Caffe leaves it unfilled: zeros
  SetValues(layer.blobs()[0].get(), {1, -2, 3, -4, 5, -6});
  layer.Forward({}, {&top});
  ExpectValues(top, {1, -2, 3, -4, 5, -6});
  SetDiffs(&top, {0.5, 1, 1.5, 2, 2.5, 3});
  layer.Backward({&top}, {}, {});
  layer.Backward({&top}, {}, {});
  ExpectValues(*layer.blobs()[0], {1, 2, 3, 4, 5, 6}, true);
}

TYPED_TEST(ParameterLayerTest, Gradient) {
  using Dtype = TypeParam;
  ParameterLayer<Dtype> layer(ParseText<LayerParameter>(
      "name: 'p' type: 'Parameter' parameter_param { shape { dim: 3 dim: 2 dim: 2 } }"));
  Blob<Dtype> top;
  layer.SetUp({}, {&top});
  Rng rng(5);
  FillGaussian<Dtype>(layer.blobs()[0].get(), rng);
  GradientChecker<Dtype> checker(1e-3, 1e-3);
  checker.CheckGradientExhaustive(&layer, {}, {&top});
}

// In a net the blob lives in the parameter arena: what the solver changes there is what
// the top carries, and the loss's gradient arrives there.
TYPED_TEST(ParameterLayerTest, LearnsInANet) {
  using Dtype = TypeParam;
  Net<Dtype> net(ParseText<NetParameter>(
      "layer { name: 'x' type: 'Input' top: 'x' input_param { shape { dim: 2 dim: 2 } } } "
      "layer { name: 'p' type: 'Parameter' top: 'p' "
      "        parameter_param { shape { dim: 2 dim: 2 } } } "
      "layer { name: 'loss' type: 'EuclideanLoss' bottom: 'p' bottom: 'x' top: 'loss' }"));
  SetValues(net.blob_by_name("x").get(), {1, 2, 3, 4});
  Blob<Dtype>& p = *net.layer_by_name("p")->blobs()[0];
  ASSERT_EQ(net.learnable_params().size(), 1u);
  for (int step = 0; step < 2; ++step) {
    net.ClearParamDiffs();
    net.ForwardBackward();
    // d/dp of sum((p - x)^2) / (2 * 2) is (p - x) / 2.
    for (int i = 0; i < 4; ++i) {
      EXPECT_NEAR(p.cpu_diff()[i], (p.cpu_data()[i] - (i + 1)) / 2, 1e-6);
    }
    cpu_scal(static_cast<int>(net.arena_count()), Dtype(2), net.mutable_arena_diff());
    net.Update();  // p -= (p - x): p becomes x
  }
  ExpectValues(p, {1, 2, 3, 4});
  Dtype loss;
  net.Forward(&loss);
  EXPECT_NEAR(loss, 0, 1e-9);
}

TEST(ParameterLayerErrorTest, BadParameters) {
  Blob<float> top;
  ExpectError(
      [&] {
        auto layer = LayerRegistry<float>::CreateLayer(
            ParseText<LayerParameter>("name: 'p' type: 'Parameter'"));
        layer->SetUp({}, {&top});
      },
      {"layer 'p' (Parameter)", "parameter_param.shape"});
  // Weights given with the layer must have the declared shape.
  LayerParameter param = ParseText<LayerParameter>(
      "name: 'p' type: 'Parameter' parameter_param { shape { dim: 2 } } "
      "blobs { shape { dim: 3 } data: 1 data: 2 data: 3 }");
  ParameterLayer<float> layer(param);
  ExpectError([&] { layer.SetUp({}, {&top}); }, {"layer 'p' (Parameter)", "(3)", "(2)"});
}

}  // namespace doppio
