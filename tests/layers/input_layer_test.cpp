#include "doppio/layers/input_layer.hpp"

#include <gtest/gtest.h>

#include <string>

#include "neuron_test_helpers.hpp"
#include "test_util.hpp"

namespace doppio {

template <typename Dtype>
class InputLayerTest : public ::testing::Test {};
TYPED_TEST_SUITE(InputLayerTest, TestDtypes);

TYPED_TEST(InputLayerTest, OneShapeForAllTops) {
  using Dtype = TypeParam;
  auto layer = LayerRegistry<Dtype>::CreateLayer(ParseText<LayerParameter>(
      "name: 'in' type: 'Input' input_param { shape { dim: 2 dim: 3 dim: 4 } }"));
  EXPECT_STREQ(layer->type(), "Input");
  Blob<Dtype> a, b;
  layer->SetUp({}, {&a, &b});
  EXPECT_EQ(a.shape(), std::vector<int>({2, 3, 4}));
  EXPECT_EQ(b.shape(), std::vector<int>({2, 3, 4}));
}

TYPED_TEST(InputLayerTest, OneShapePerTop) {
  using Dtype = TypeParam;
  InputLayer<Dtype> layer(ParseText<LayerParameter>(
      "name: 'in' type: 'Input' input_param { shape { dim: 5 dim: 1 dim: 28 dim: 28 } "
      "shape { dim: 5 } }"));
  Blob<Dtype> data, label;
  layer.SetUp({}, {&data, &label});
  EXPECT_EQ(data.shape(), std::vector<int>({5, 1, 28, 28}));
  EXPECT_EQ(label.shape(), std::vector<int>({5}));
}

TYPED_TEST(InputLayerTest, ForwardAndBackwardLeaveTopsAlone) {
  using Dtype = TypeParam;
  InputLayer<Dtype> layer(
      ParseText<LayerParameter>("name: 'in' type: 'Input' input_param { shape { dim: 3 } }"));
  Blob<Dtype> top;
  layer.SetUp({}, {&top});
  SetValues(&top, {1, 2, 3});
  SetDiffs(&top, {4, 5, 6});
  EXPECT_EQ(layer.Forward({}, {&top}), 0);
  layer.Backward({&top}, {}, {});
  EXPECT_EQ(top.shape(), std::vector<int>({3}));
  ExpectValues(top, {1, 2, 3});
  ExpectValues(top, {4, 5, 6}, true);
}

TYPED_TEST(InputLayerTest, NoShapeLeavesTopsAsTheyAre) {
  using Dtype = TypeParam;
  InputLayer<Dtype> layer(ParseText<LayerParameter>("name: 'in' type: 'Input'"));
  Blob<Dtype> top({7, 2});
  layer.SetUp({}, {&top});
  EXPECT_EQ(top.shape(), std::vector<int>({7, 2}));
}

TYPED_TEST(InputLayerTest, ShapeCountMismatch) {
  using Dtype = TypeParam;
  InputLayer<Dtype> layer(ParseText<LayerParameter>(
      "name: 'in' type: 'Input' input_param { shape { dim: 1 } shape { dim: 2 } }"));
  Blob<Dtype> a, b, c;
  const std::string message = ErrorMessageOf([&] { layer.SetUp({}, {&a, &b, &c}); });
  EXPECT_CONTAINS(message, "layer 'in' (Input)");
  EXPECT_CONTAINS(message, "input_param.shape");
}

TYPED_TEST(InputLayerTest, ZeroOrNegativeDimension) {
  using Dtype = TypeParam;
  for (const char* dims : {"dim: 2 dim: 0", "dim: -3 dim: 2"}) {
    SCOPED_TRACE(dims);
    InputLayer<Dtype> layer(ParseText<LayerParameter>(
        std::string("name: 'in' type: 'Input' input_param { shape { ") + dims + " } }"));
    Blob<Dtype> top;
    const std::string message = ErrorMessageOf([&] { layer.SetUp({}, {&top}); });
    EXPECT_CONTAINS(message, "layer 'in' (Input)");
    EXPECT_CONTAINS(message, "input_param.shape");
  }
}

TYPED_TEST(InputLayerTest, RejectsBottoms) {
  using Dtype = TypeParam;
  InputLayer<Dtype> layer(
      ParseText<LayerParameter>("name: 'in' type: 'Input' input_param { shape { dim: 1 } }"));
  Blob<Dtype> bottom({1}), top;
  EXPECT_CONTAINS(ErrorMessageOf([&] { layer.SetUp({&bottom}, {&top}); }), "layer 'in' (Input)");
}

}  // namespace doppio
