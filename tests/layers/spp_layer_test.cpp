#include "doppio/layers/spp_layer.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "doppio/core/layer_registry.hpp"
#include "gradient_checker.hpp"
#include "test_util.hpp"

namespace doppio {

template <typename Dtype>
class SPPLayerTest : public ::testing::Test {};
TYPED_TEST_SUITE(SPPLayerTest, TestDtypes);

LayerParameter SPPParam(int height, const std::string& pool = "MAX") {
  return ParseText<LayerParameter>("name: 'spp' type: 'SPP' spp_param { pyramid_height: " +
                                   std::to_string(height) + " pool: " + pool + " }");
}

// Distinct values a tenth apart in a shuffled order: no ties for MAX, no kinks within a step.
template <typename Dtype>
void FillDistinct(Blob<Dtype>* blob, std::uint64_t seed) {
  std::vector<int> order(blob->count());
  std::iota(order.begin(), order.end(), 0);
  Rng rng(seed);
  std::shuffle(order.begin(), order.end(), rng.engine());
  for (int i = 0; i < blob->count(); ++i) blob->mutable_cpu_data()[i] = Dtype(0.1) * order[i];
}

TYPED_TEST(SPPLayerTest, Shapes) {
  using Dtype = TypeParam;
  Blob<Dtype> bottom({2, 3, 9, 8}), top;
  SPPLayer<Dtype> one(SPPParam(1));
  one.SetUp({&bottom}, {&top});
  EXPECT_EQ(top.shape(), (std::vector<int>{2, 3, 1, 1}));
  SPPLayer<Dtype> three(SPPParam(3));
  three.SetUp({&bottom}, {&top});
  EXPECT_EQ(top.shape(), (std::vector<int>{2, 3 * (1 + 4 + 16)}));
  three.SetUp({&bottom}, {&top});  // a second set-up starts over
  EXPECT_EQ(top.shape(), (std::vector<int>{2, 3 * (1 + 4 + 16)}));
  // A new input size gets new pooling windows.
  Blob<Dtype> bigger({1, 3, 13, 11});
  three.Forward({&bigger}, {&top});
  EXPECT_EQ(top.shape(), (std::vector<int>{1, 63}));
}

TYPED_TEST(SPPLayerTest, ForwardBackwardHandComputed) {
  using Dtype = TypeParam;
  SPPLayer<Dtype> layer(SPPParam(2));
  Blob<Dtype> bottom({1, 2, 4, 4}), top;
  for (int i = 0; i < 32; ++i) bottom.mutable_cpu_data()[i] = i;
  layer.SetUp({&bottom}, {&top});
  layer.Forward({&bottom}, {&top});
  // Level 0: each channel's maximum; level 1: the maxima of its four 2x2 quarters.
  ExpectValues(top, {15, 31, 5, 7, 13, 15, 21, 23, 29, 31});
  for (int i = 0; i < 10; ++i) top.mutable_cpu_diff()[i] = i + 1;
  layer.Backward({&top}, {true}, {&bottom});
  std::vector<double> expected(32, 0);
  expected[15] = 1 + 6;  // picked by level 0 and by the last quarter of level 1
  expected[31] = 2 + 10;
  expected[5] = 3;
  expected[7] = 4;
  expected[13] = 5;
  expected[21] = 7;
  expected[23] = 8;
  expected[29] = 9;
  ExpectValues(bottom, expected, true);
}

TYPED_TEST(SPPLayerTest, GradientMax) {
  using Dtype = TypeParam;
  SPPLayer<Dtype> layer(SPPParam(3));
  Blob<Dtype> bottom({2, 2, 6, 7}), top;
  FillDistinct(&bottom, 12);
  GradientChecker<Dtype> checker(1e-3, 1e-3);
  checker.CheckGradientExhaustive(&layer, {&bottom}, {&top});
}

TYPED_TEST(SPPLayerTest, GradientAve) {
  using Dtype = TypeParam;
  SPPLayer<Dtype> layer(SPPParam(3, "AVE"));
  Rng rng(13);
  Blob<Dtype> bottom({2, 2, 6, 7}), top;
  FillGaussian<Dtype>(&bottom, rng);
  GradientChecker<Dtype> checker(1e-3, 1e-3);
  checker.CheckGradientExhaustive(&layer, {&bottom}, {&top});
}

TEST(SPPLayerErrorTest, BadParametersNameTheLayerAndField) {
  const auto setup = [](const LayerParameter& param, const std::vector<int>& shape) {
    auto layer = LayerRegistry<float>::CreateLayer(param);
    Blob<float> bottom(shape), top;
    layer->SetUp({&bottom}, {&top});
  };
  ExpectError(
      [&] {
        setup(SPPParam(0), {1, 1, 4, 4});
      },
      {"layer 'spp' (SPP)", "spp_param.pyramid_height"});
  // Level 2 of a 3x3 input: 4 bins of 1 pixel would need a padding of 1.
  ExpectError(
      [&] {
        setup(SPPParam(3), {1, 1, 3, 3});
      },
      {"layer 'spp' (SPP)", "spp_param.pyramid_height 3 is too high", "3x3"});
  ExpectError(
      [&] {
        setup(SPPParam(2, "STOCHASTIC"), {1, 1, 5, 5});
      },
      {"layer 'spp' (SPP)", "STOCHASTIC"});
  setup(SPPParam(2, "STOCHASTIC"), {1, 1, 4, 4});
  ExpectError([&] { setup(SPPParam(2), {1, 4, 4}); }, {"layer 'spp' (SPP)", "4 axes"});
}

}  // namespace doppio
