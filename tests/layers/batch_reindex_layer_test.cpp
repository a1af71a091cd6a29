#include "doppio/layers/batch_reindex_layer.hpp"

#include <gtest/gtest.h>

#include "doppio/core/layer_registry.hpp"
#include "gradient_checker.hpp"
#include "test_util.hpp"

namespace doppio {

template <typename Dtype>
class BatchReindexLayerTest : public ::testing::Test {
 protected:
  LayerParameter param_ = ParseText<LayerParameter>("name: 'r' type: 'BatchReindex'");
};
TYPED_TEST_SUITE(BatchReindexLayerTest, TestDtypes);

TYPED_TEST(BatchReindexLayerTest, ForwardBackwardHandComputed) {
  using Dtype = TypeParam;
  BatchReindexLayer<Dtype> layer(this->param_);
  Blob<Dtype> data({3, 2}), index({4}), top;
  SetValues(&data, {1, 2, 3, 4, 5, 6});
  // Item 2 twice, item 1 never.
  SetValues(&index, {2, 0, 2, 0});
  layer.SetUp({&data, &index}, {&top});
  EXPECT_EQ(top.shape(), (std::vector<int>{4, 2}));
  layer.Forward({&data, &index}, {&top});
  ExpectValues(top, {5, 6, 1, 2, 5, 6, 1, 2});
  SetDiffs(&top, {1, 2, 10, 20, 100, 200, 1000, 2000});
  SetDiffs(&data, {9, 9, 9, 9, 9, 9});  // overwritten, not added to
  layer.Backward({&top}, {true, false}, {&data, &index});
  ExpectValues(data, {1010, 2020, 0, 0, 101, 202}, true);
}

TYPED_TEST(BatchReindexLayerTest, Gradient) {
  using Dtype = TypeParam;
  BatchReindexLayer<Dtype> layer(this->param_);
  Rng rng(6);
  Blob<Dtype> data({5, 2, 3}), index({7}), top;
  FillGaussian<Dtype>(&data, rng);
  SetValues(&index, {4, 0, 4, 3, 1, 3, 4});
  GradientChecker<Dtype> checker(1e-3, 1e-3);
  checker.CheckGradientExhaustive(&layer, {&data, &index}, {&top}, 0);
}

TEST(BatchReindexLayerErrorTest, BadIndicesNameTheLayer) {
  for (const double bad : {-1.0, 3.0, 1.5}) {
    SCOPED_TRACE(bad);
    auto layer = LayerRegistry<float>::CreateLayer(
        ParseText<LayerParameter>("name: 'r' type: 'BatchReindex'"));
    Blob<float> data({3, 2}), index({2}), top;
    SetValues(&index, {0, bad});
    layer->SetUp({&data, &index}, {&top});
    ExpectError(
        [&] {
          layer->Forward({&data, &index}, {&top});
        },
        {"layer 'r' (BatchReindex)", "index 1", "[0, 3)"});
  }
}

TEST(BatchReindexLayerErrorTest, IndicesMustBeOneDimensionalAndTakeNoGradient) {
  auto layer = LayerRegistry<float>::CreateLayer(
      ParseText<LayerParameter>("name: 'r' type: 'BatchReindex'"));
  Blob<float> data({3, 2}), index({2, 1}), top;
  ExpectError(
      [&] {
        layer->SetUp({&data, &index}, {&top});
      },
      {"layer 'r' (BatchReindex)", "1-d", "2 1 (2)"});
  index.Reshape({2});
  SetValues(&index, {0, 1});
  layer->SetUp({&data, &index}, {&top});
  layer->Forward({&data, &index}, {&top});
  ExpectError(
      [&] {
        layer->Backward({&top}, {true, true}, {&data, &index});
      },
      {"layer 'r' (BatchReindex)", "indices"});
}

}  // namespace doppio
