#include "doppio/layers/flatten_layer.hpp"

#include <gtest/gtest.h>

#include "doppio/core/layer_registry.hpp"
#include "gradient_checker.hpp"
#include "test_util.hpp"

namespace doppio {

template <typename Dtype>
class FlattenLayerTest : public ::testing::Test {
 protected:
  static LayerParameter Param(const std::string& flatten_param) {
    return ParseText<LayerParameter>("name: 'flat' type: 'Flatten' flatten_param { " +
                                     flatten_param + " }");
  }
  std::vector<int> TopShape(const std::string& flatten_param, const std::vector<int>& shape) {
    Blob<Dtype> bottom(shape), top;
    FlattenLayer<Dtype> layer(Param(flatten_param));
    layer.SetUp({&bottom}, {&top});
    return top.shape();
  }
  Rng rng_{31337};
};
TYPED_TEST_SUITE(FlattenLayerTest, TestDtypes);

TYPED_TEST(FlattenLayerTest, OutputShapes) {
  using V = std::vector<int>;
  EXPECT_EQ(this->TopShape("", {2, 3, 4, 5}), V({2, 60}));
  EXPECT_EQ(this->TopShape("axis: 2", {2, 3, 4, 5}), V({2, 3, 20}));
  EXPECT_EQ(this->TopShape("axis: 1 end_axis: 2", {2, 3, 4, 5}), V({2, 12, 5}));
  EXPECT_EQ(this->TopShape("axis: 0 end_axis: -2", {2, 3, 4, 5}), V({24, 5}));
  EXPECT_EQ(this->TopShape("axis: -1", {2, 3, 4, 5}), V({2, 3, 4, 5}));
  EXPECT_EQ(this->TopShape("axis: 0", {2, 3}), V({6}));
}

TYPED_TEST(FlattenLayerTest, TopViewsBottom) {
  Blob<TypeParam> bottom({2, 3, 4, 5}), top;
  for (int i = 0; i < bottom.count(); ++i) bottom.mutable_cpu_data()[i] = i;
  FlattenLayer<TypeParam> layer(this->Param(""));
  layer.SetUp({&bottom}, {&top});
  layer.Forward({&bottom}, {&top});
  EXPECT_EQ(top.cpu_data(), bottom.cpu_data());
  EXPECT_EQ(top.data_at(1, 7, 0, 0), 67);
  top.mutable_cpu_diff()[63] = 4;
  layer.Backward({&top}, {true}, {&bottom});
  EXPECT_EQ(bottom.diff_at(1, 0, 0, 3), 4);
}

TYPED_TEST(FlattenLayerTest, Gradient) {
  Blob<TypeParam> bottom({2, 3, 2, 2}), top;
  FillGaussian(&bottom, this->rng_);
  FlattenLayer<TypeParam> layer(this->Param("axis: 1"));
  GradientChecker<TypeParam> checker(1e-2, 1e-3);
  checker.CheckGradientEltwise(&layer, {&bottom}, {&top});
}

TYPED_TEST(FlattenLayerTest, RejectsInPlaceAndBadAxes) {
  Blob<TypeParam> bottom({2, 3, 4}), top;
  FlattenLayer<TypeParam> layer(this->Param(""));
  ExpectError([&] { layer.SetUp({&bottom}, {&bottom}); }, {"layer 'flat' (Flatten)"});
  FlattenLayer<TypeParam> far(this->Param("axis: 3"));
  ExpectError([&] { far.SetUp({&bottom}, {&top}); }, {"layer 'flat' (Flatten)", "axis"});
  FlattenLayer<TypeParam> backwards(this->Param("axis: 2 end_axis: 0"));
  ExpectError([&] { backwards.SetUp({&bottom}, {&top}); }, {"layer 'flat' (Flatten)", "end_axis"});
}

TYPED_TEST(FlattenLayerTest, IsRegistered) {
  EXPECT_STREQ(LayerRegistry<TypeParam>::CreateLayer(this->Param(""))->type(), "Flatten");
}

}  // namespace doppio
