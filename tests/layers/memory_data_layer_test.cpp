#include "doppio/layers/memory_data_layer.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "doppio/core/layer_registry.hpp"
#include "doppio/core/net.hpp"
#include "synthetic_inputs.hpp"
#include "test_util.hpp"

namespace doppio {

template <typename Dtype>
class MemoryDataLayerTest : public ::testing::Test {
 protected:
  LayerParameter param_ = ParseText<LayerParameter>(
      "name: 'mem' type: 'MemoryData' memory_data_param { batch_size: 2 channels: 1 height: 1 "
      "width: 3 }");
};
TYPED_TEST_SUITE(MemoryDataLayerTest, TestDtypes);

TYPED_TEST(MemoryDataLayerTest, ServesTheFedBatchesInTurn) {
  using Dtype = TypeParam;
  MemoryDataLayer<Dtype> layer(this->param_);
  Blob<Dtype> data, labels;
  layer.SetUp({}, {&data, &labels});
  EXPECT_EQ(data.shape(), (std::vector<int>{2, 1, 1, 3}));
  EXPECT_EQ(labels.shape(), (std::vector<int>{2}));
  const std::vector<Dtype> items = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  const std::vector<Dtype> classes = {0, 1, 2, 3};
  layer.Reset(items.data(), classes.data(), 4);
  layer.Forward({}, {&data, &labels});
  ExpectValues(data, {1, 2, 3, 4, 5, 6});
  ExpectValues(labels, {0, 1});
  layer.Forward({}, {&data, &labels});
  ExpectValues(data, {7, 8, 9, 10, 11, 12});
  ExpectValues(labels, {2, 3});
  layer.Forward({}, {&data, &labels});  // around to the first batch
  ExpectValues(labels, {0, 1});
  // One item per batch from here: the next is item 2.
  layer.Forward({}, {&data, &labels});
  layer.set_batch_size(1);
  layer.Forward({}, {&data, &labels});
  EXPECT_EQ(data.shape(), (std::vector<int>{1, 1, 1, 3}));
  ExpectValues(labels, {0});
  // A new Reset starts at the first item of the new arrays.
  const std::vector<Dtype> other = {-1, -2, -3};
  const std::vector<Dtype> other_class = {9};
  layer.Reset(other.data(), other_class.data(), 1);
  layer.Forward({}, {&data, &labels});
  ExpectValues(data, {-1, -2, -3});
  ExpectValues(labels, {9});
}

// Fed through the C++ API and trained: plain gradient steps on a linear classifier must fit
// two separable classes.
TYPED_TEST(MemoryDataLayerTest, FeedsANetThatTrains) {
  using Dtype = TypeParam;
  Net<Dtype> net(ParseText<NetParameter>(
      "state { phase: TRAIN } "
      "layer { name: 'mem' type: 'MemoryData' top: 'x' top: 'y' "
      "        memory_data_param { batch_size: 4 channels: 2 height: 1 width: 1 } } "
      "layer { name: 'ip' type: 'InnerProduct' bottom: 'x' top: 'score' "
      "        inner_product_param { num_output: 2 weight_filler { type: 'gaussian' std: 0.1 } } } "
      "layer { name: 'loss' type: 'SoftmaxWithLoss' bottom: 'score' bottom: 'y' top: 'loss' }"));
  auto memory = std::dynamic_pointer_cast<MemoryDataLayer<Dtype>>(net.layer_by_name("mem"));
  ASSERT_NE(memory, nullptr);
  // Class 1 where x0 > x1; 8 items, two batches.
  const std::vector<Dtype> x = {1, 0, 0, 1, 2, 1, 1, 2, 0.5, -1, -1, 0.5, 3, 0, 0, 3};
  const std::vector<Dtype> y = {1, 0, 1, 0, 1, 0, 1, 0};
  memory->Reset(x.data(), y.data(), 8);
  Dtype first = 0, last = 0;
  for (int step = 0; step < 40; ++step) {
    net.ClearParamDiffs();
    const Dtype loss = net.ForwardBackward();
    if (step == 0) first = loss;
    last = loss;
    cpu_scal(static_cast<int>(net.arena_count()), Dtype(0.5), net.mutable_arena_diff());
    net.Update();
  }
  EXPECT_LT(last, 0.25 * first) << "first loss " << first;
}

TYPED_TEST(MemoryDataLayerTest, TimingReplacesItWithItsShape) {
  const NetParameter synthetic = WithSyntheticInputs(
      ParseText<NetParameter>(
          "layer { name: 'mem' type: 'MemoryData' top: 'x' top: 'y' "
          "memory_data_param { batch_size: 4 channels: 3 height: 5 width: 6 } }"),
      0, {});
  ASSERT_EQ(synthetic.layer(0).type(), "DummyData");
  const BlobShape& shape = synthetic.layer(0).dummy_data_param().shape(0);
  ASSERT_EQ(shape.dim_size(), 4);
  EXPECT_EQ(shape.dim(0), 4);
  EXPECT_EQ(shape.dim(1), 3);
  EXPECT_EQ(shape.dim(2), 5);
  EXPECT_EQ(shape.dim(3), 6);
}

TEST(MemoryDataLayerErrorTest, MisuseNamesTheLayer) {
  const auto make = [](const std::string& batch_size) {
    return LayerRegistry<float>::CreateLayer(ParseText<LayerParameter>(
        "name: 'mem' type: 'MemoryData' memory_data_param { batch_size: " + batch_size +
        " channels: 1 height: 2 width: 2 }"));
  };
  Blob<float> data, labels;
  auto layer = make("2");
  layer->SetUp({}, {&data, &labels});
  ExpectError([&] { layer->Forward({}, {&data, &labels}); }, {"layer 'mem' (MemoryData)", "Reset"});
  auto* memory = dynamic_cast<MemoryDataLayer<float>*>(layer.get());
  ASSERT_NE(memory, nullptr);
  const std::vector<float> values(12, 1.f), classes(3, 0.f);
  ExpectError([&] { memory->Reset(values.data(), classes.data(), 3); },
              {"layer 'mem' (MemoryData)", "multiple of the batch size 2"});
  ExpectError([&] { memory->Reset(nullptr, classes.data(), 2); },
              {"layer 'mem' (MemoryData)", "data and a label array"});
  memory->Reset(values.data(), classes.data(), 2);
  ExpectError([&] { memory->set_batch_size(4); }, {"layer 'mem' (MemoryData)", "batch size to 4"});
  ExpectError(
      [&] {
        make("0")->SetUp({}, {&data, &labels});
      },
      {"layer 'mem' (MemoryData)", "memory_data_param.batch_size"});
  ExpectError(
      [&] {
        LayerParameter param = ParseText<LayerParameter>(
            "name: 'mem' type: 'MemoryData' memory_data_param { batch_size: 2 channels: 1 } ");
        LayerRegistry<float>::CreateLayer(param)->SetUp({}, {&data, &labels});
      },
      {"layer 'mem' (MemoryData)", "memory_data_param.height"});
  ExpectError(
      [&] {
        LayerParameter param = ParseText<LayerParameter>(
            "name: 'mem' type: 'MemoryData' memory_data_param { batch_size: 2 channels: 1 "
            "height: 1 width: 1 } transform_param { scale: 0.5 }");
        LayerRegistry<float>::CreateLayer(param)->SetUp({}, {&data, &labels});
      },
      {"layer 'mem' (MemoryData)", "transform_param"});
}

}  // namespace doppio
