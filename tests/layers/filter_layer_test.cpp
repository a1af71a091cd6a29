#include "doppio/layers/filter_layer.hpp"

#include <gtest/gtest.h>

#include "doppio/core/layer_registry.hpp"
#include "gradient_checker.hpp"
#include "test_util.hpp"

namespace doppio {

template <typename Dtype>
class FilterLayerTest : public ::testing::Test {
 protected:
  LayerParameter param_ = ParseText<LayerParameter>("name: 'f' type: 'Filter'");
};
TYPED_TEST_SUITE(FilterLayerTest, TestDtypes);

TYPED_TEST(FilterLayerTest, ForwardBackwardHandComputed) {
  using Dtype = TypeParam;
  FilterLayer<Dtype> layer(this->param_);
  Blob<Dtype> data({4, 2}), labels({4}), select({4, 1}), top_data, top_labels;
  SetValues(&data, {1, 2, 3, 4, 5, 6, 7, 8});
  SetValues(&labels, {10, 11, 12, 13});
  layer.SetUp({&data, &labels, &select}, {&top_data, &top_labels});
  // At set-up, before any selector values, the tops hold every item.
  EXPECT_EQ(top_data.shape(), (std::vector<int>{4, 2}));
  SetValues(&select, {0, 1, 0, -2});  // any non-zero value selects
  layer.Forward({&data, &labels, &select}, {&top_data, &top_labels});
  EXPECT_EQ(top_data.shape(), (std::vector<int>{2, 2}));
  ExpectValues(top_data, {3, 4, 7, 8});
  ExpectValues(top_labels, {11, 13});
  SetDiffs(&top_data, {1, 2, 3, 4});
  SetDiffs(&data, {9, 9, 9, 9, 9, 9, 9, 9});
  layer.Backward({&top_data, &top_labels}, {true, false, false}, {&data, &labels, &select});
  ExpectValues(data, {0, 0, 1, 2, 0, 0, 3, 4}, true);
}

TYPED_TEST(FilterLayerTest, NothingSelected) {
  using Dtype = TypeParam;
  FilterLayer<Dtype> layer(this->param_);
  Blob<Dtype> data({3, 2}), select({3}), top;
  layer.SetUp({&data, &select}, {&top});
  SetValues(&select, {0, 0, 0});
  layer.Forward({&data, &select}, {&top});
  EXPECT_EQ(top.shape(), (std::vector<int>{0, 2}));
  SetDiffs(&data, {9, 9, 9, 9, 9, 9});
  layer.Backward({&top}, {true, false}, {&data, &select});
  ExpectValues(data, {0, 0, 0, 0, 0, 0}, true);
}

TYPED_TEST(FilterLayerTest, Gradient) {
  using Dtype = TypeParam;
  FilterLayer<Dtype> layer(this->param_);
  Rng rng(7);
  Blob<Dtype> a({5, 3}), b({5, 2, 2}), select({5}), top_a, top_b;
  FillGaussian<Dtype>(&a, rng);
  FillGaussian<Dtype>(&b, rng);
  SetValues(&select, {1, 0, 1, 1, 0});
  GradientChecker<Dtype> checker(1e-3, 1e-3);
  checker.CheckGradientExhaustive(&layer, {&a, &b, &select}, {&top_a, &top_b}, 0);
  checker.CheckGradientExhaustive(&layer, {&a, &b, &select}, {&top_a, &top_b}, 1);
}

TEST(FilterLayerErrorTest, BadShapesAndCountsNameTheLayer) {
  const auto make = [] {
    return LayerRegistry<float>::CreateLayer(ParseText<LayerParameter>("name: 'f' type: 'Filter'"));
  };
  Blob<float> data({3, 2}), select({3, 2}), top, extra;
  ExpectError(
      [&] {
        make()->SetUp({&data, &select}, {&top});
      },
      {"layer 'f' (Filter)", "selector", "3 2 (6)"});
  Blob<float> select4({4});
  ExpectError(
      [&] {
        make()->SetUp({&data, &select4}, {&top});
      },
      {"layer 'f' (Filter)", "bottom 0", "4 items"});
  Blob<float> select3({3});
  ExpectError(
      [&] {
        make()->SetUp({&data, &select3}, {&top, &extra});
      },
      {"layer 'f' (Filter)", "one top per bottom"});
  auto layer = make();
  layer->SetUp({&data, &select3}, {&top});
  layer->Forward({&data, &select3}, {&top});
  ExpectError(
      [&] {
        layer->Backward({&top}, {true, true}, {&data, &select3});
      },
      {"layer 'f' (Filter)", "selector"});
}

}  // namespace doppio
