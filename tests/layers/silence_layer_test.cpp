#include "doppio/layers/silence_layer.hpp"

#include <gtest/gtest.h>

#include "neuron_test_helpers.hpp"
#include "test_util.hpp"

namespace doppio {

template <typename Dtype>
class SilenceLayerTest : public ::testing::Test {};
TYPED_TEST_SUITE(SilenceLayerTest, TestDtypes);

TYPED_TEST(SilenceLayerTest, ForwardNothingBackwardZeros) {
  using Dtype = TypeParam;
  auto layer =
      LayerRegistry<Dtype>::CreateLayer(ParseText<LayerParameter>("name: 's' type: 'Silence'"));
  EXPECT_STREQ(layer->type(), "Silence");
  Blob<Dtype> a({2, 2}), b({3}), c({1});
  SetValues(&a, {1, 2, 3, 4});
  SetDiffs(&a, {5, 5, 5, 5});
  SetDiffs(&b, {6, 6, 6});
  SetDiffs(&c, {7});
  layer->SetUp({&a, &b, &c}, {});
  EXPECT_EQ(layer->Forward({&a, &b, &c}, {}), 0);
  ExpectValues(a, {1, 2, 3, 4});
  layer->Backward({}, {true, false, true}, {&a, &b, &c});
  ExpectValues(a, {0, 0, 0, 0}, true);
  ExpectValues(b, {6, 6, 6}, true);  // not propagated: untouched
  ExpectValues(c, {0}, true);
  ExpectValues(a, {1, 2, 3, 4});
}

TYPED_TEST(SilenceLayerTest, BlobCounts) {
  using Dtype = TypeParam;
  SilenceLayer<Dtype> layer(ParseText<LayerParameter>("name: 's' type: 'Silence'"));
  Blob<Dtype> a({1}), t;
  EXPECT_CONTAINS(ErrorMessageOf([&] { layer.SetUp({}, {}); }), "layer 's' (Silence)");
  EXPECT_CONTAINS(ErrorMessageOf([&] { layer.SetUp({&a}, {&t}); }), "layer 's' (Silence)");
}

}  // namespace doppio
