#include "doppio/layers/dummy_data_layer.hpp"

#include <gtest/gtest.h>

#include <string>

#include "neuron_test_helpers.hpp"
#include "test_util.hpp"

namespace doppio {

template <typename Dtype>
class DummyDataLayerTest : public ::testing::Test {
 protected:
  static LayerParameter Param(const std::string& dummy) {
    return ParseText<LayerParameter>("name: 'dd' type: 'DummyData' dummy_data_param { " + dummy +
                                     " }");
  }
  static std::vector<Dtype> Data(const Blob<Dtype>& blob) {
    return std::vector<Dtype>(blob.cpu_data(), blob.cpu_data() + blob.count());
  }
  // SetUp must throw an Error naming the layer and `field`.
  void ExpectSetUpError(const std::string& dummy, int num_top, const std::string& field) {
    SCOPED_TRACE(dummy);
    DummyDataLayer<Dtype> layer(Param(dummy));
    std::vector<Blob<Dtype>> tops(num_top);
    std::vector<Blob<Dtype>*> top;
    for (auto& t : tops) top.push_back(&t);
    const std::string message = ErrorMessageOf([&] { layer.SetUp({}, top); });
    EXPECT_CONTAINS(message, "layer 'dd' (DummyData)");
    EXPECT_CONTAINS(message, field);
  }
};
TYPED_TEST_SUITE(DummyDataLayerTest, TestDtypes);

TYPED_TEST(DummyDataLayerTest, ShapeAndDefaultZeroFiller) {
  using Dtype = TypeParam;
  auto layer = LayerRegistry<Dtype>::CreateLayer(this->Param("shape { dim: 2 dim: 3 }"));
  EXPECT_STREQ(layer->type(), "DummyData");
  // Stale values in the tops must be overwritten by the zero filler.
  Blob<Dtype> a({6}), b({6});
  SetValues(&a, {9, 9, 9, 9, 9, 9});
  SetValues(&b, {9, 9, 9, 9, 9, 9});
  layer->SetUp({}, {&a, &b});
  EXPECT_EQ(a.shape(), std::vector<int>({2, 3}));
  EXPECT_EQ(b.shape(), std::vector<int>({2, 3}));
  ExpectValues(a, {0, 0, 0, 0, 0, 0});
  ExpectValues(b, {0, 0, 0, 0, 0, 0});
}

TYPED_TEST(DummyDataLayerTest, ConstantFilledOnceAtSetUp) {
  using Dtype = TypeParam;
  DummyDataLayer<Dtype> layer(
      this->Param("shape { dim: 3 } data_filler { type: 'constant' value: 1.5 }"));
  Blob<Dtype> top;
  layer.SetUp({}, {&top});
  ExpectValues(top, {1.5, 1.5, 1.5});
  // Forward does not refill a constant top: a change made by a consumer stays.
  top.mutable_cpu_data()[1] = 7;
  layer.Forward({}, {&top});
  ExpectValues(top, {1.5, 7, 1.5});
}

TYPED_TEST(DummyDataLayerTest, RandomFillerRefillsEveryForward) {
  using Dtype = TypeParam;
  DummyDataLayer<Dtype> layer(
      this->Param("shape { dim: 50 } data_filler { type: 'uniform' min: 2 max: 3 }"));
  Blob<Dtype> top;
  layer.SetUp({}, {&top});
  layer.Forward({}, {&top});
  const std::vector<Dtype> first = this->Data(top);
  for (Dtype v : first) {
    EXPECT_GE(v, 2);
    EXPECT_LE(v, 3);
  }
  layer.Forward({}, {&top});
  EXPECT_NE(first, this->Data(top));
}

TYPED_TEST(DummyDataLayerTest, OneFillerPerTop) {
  using Dtype = TypeParam;
  DummyDataLayer<Dtype> layer(this->Param(
      "shape { dim: 2 } shape { dim: 1 dim: 3 } data_filler { type: 'constant' value: -1 } "
      "data_filler { type: 'gaussian' std: 1 }"));
  Blob<Dtype> a, b;
  layer.SetUp({}, {&a, &b});
  EXPECT_EQ(a.shape(), std::vector<int>({2}));
  EXPECT_EQ(b.shape(), std::vector<int>({1, 3}));
  layer.Forward({}, {&a, &b});
  ExpectValues(a, {-1, -1});
  const std::vector<Dtype> first = this->Data(b);
  layer.Forward({}, {&a, &b});
  EXPECT_NE(first, this->Data(b));
  ExpectValues(a, {-1, -1});
}

TYPED_TEST(DummyDataLayerTest, LegacyDimensions) {
  using Dtype = TypeParam;
  DummyDataLayer<Dtype> layer(
      this->Param("num: 2 channels: 3 height: 4 width: 5 data_filler { value: 2 }"));
  Blob<Dtype> top;
  layer.SetUp({}, {&top});
  EXPECT_EQ(top.shape(), std::vector<int>({2, 3, 4, 5}));
  EXPECT_EQ(top.asum_data(), 2 * 120);
}

TYPED_TEST(DummyDataLayerTest, LegacyDimensionsPerTop) {
  using Dtype = TypeParam;
  DummyDataLayer<Dtype> layer(
      this->Param("num: 2 num: 5 channels: 3 height: 1 height: 2 width: 1"));
  Blob<Dtype> a, b;
  layer.SetUp({}, {&a, &b});
  EXPECT_EQ(a.shape(), std::vector<int>({2, 3, 1, 1}));
  EXPECT_EQ(b.shape(), std::vector<int>({5, 3, 2, 1}));
}

TYPED_TEST(DummyDataLayerTest, BadInputs) {
  this->ExpectSetUpError("shape { dim: 2 } num: 1 channels: 1 height: 1 width: 1", 1,
                         "dummy_data_param.shape");
  this->ExpectSetUpError("shape { dim: 2 } shape { dim: 3 }", 3, "dummy_data_param.shape");
  this->ExpectSetUpError("", 1, "dummy_data_param.shape");
  this->ExpectSetUpError("num: 1 num: 2 channels: 1 height: 1 width: 1", 3, "dummy_data_param.num");
  this->ExpectSetUpError("num: 2 channels: 3", 1, "dummy_data_param.height");
  this->ExpectSetUpError("shape { dim: 2 } data_filler { } data_filler { }", 3,
                         "dummy_data_param.data_filler");
  this->ExpectSetUpError("shape { dim: 2 dim: 0 }", 1, "dummy_data_param.shape");
  this->ExpectSetUpError("shape { dim: -2 }", 1, "dummy_data_param.shape");
  this->ExpectSetUpError("num: 0 channels: 1 height: 1 width: 1", 1, "num/channels/height/width");
  this->ExpectSetUpError("shape { dim: 2 } data_filler { type: 'nonsense' }", 1,
                         "dummy_data_param.data_filler");
}

}  // namespace doppio
