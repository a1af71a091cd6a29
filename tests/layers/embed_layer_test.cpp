#include "doppio/layers/embed_layer.hpp"

#include <gtest/gtest.h>

#include "doppio/core/layer_registry.hpp"
#include "gradient_checker.hpp"
#include "test_util.hpp"

namespace doppio {

template <typename Dtype>
class EmbedLayerTest : public ::testing::Test {
 protected:
  EmbedLayerTest() : indices_({2, 2}) { SetValues(&indices_, {2, 0, 1, 2}); }
  static LayerParameter Param(const std::string& embed_param) {
    return ParseText<LayerParameter>("name: 'emb' type: 'Embed' embed_param { " + embed_param +
                                     " }");
  }
  // A 3 x 2 table with rows (1, 2), (3, 4), (5, 6) and bias (0.5, -1).
  void SetTable(EmbedLayer<Dtype>* layer) {
    SetValues(layer->blobs()[0].get(), {1, 2, 3, 4, 5, 6});
    if (layer->blobs().size() > 1) SetValues(layer->blobs()[1].get(), {0.5, -1});
  }
  Blob<Dtype> indices_, top_;
  Rng rng_{9001};
};
TYPED_TEST_SUITE(EmbedLayerTest, TestDtypes);

TYPED_TEST(EmbedLayerTest, ForwardLooksUpRowsAndAddsBias) {
  EmbedLayer<TypeParam> layer(this->Param("num_output: 2 input_dim: 3"));
  layer.SetUp({&this->indices_}, {&this->top_});
  ASSERT_EQ(layer.blobs().size(), 2u);
  EXPECT_EQ(layer.blobs()[0]->shape(), std::vector<int>({3, 2}));
  EXPECT_EQ(layer.blobs()[1]->shape(), std::vector<int>({2}));
  EXPECT_EQ(this->top_.shape(), std::vector<int>({2, 2, 2}));
  this->SetTable(&layer);
  layer.Forward({&this->indices_}, {&this->top_});
  ExpectValues(this->top_, {5.5, 5, 1.5, 1, 3.5, 3, 5.5, 5});
}

TYPED_TEST(EmbedLayerTest, ForwardWithoutBias) {
  EmbedLayer<TypeParam> layer(this->Param("num_output: 2 input_dim: 3 bias_term: false"));
  layer.SetUp({&this->indices_}, {&this->top_});
  ASSERT_EQ(layer.blobs().size(), 1u);
  this->SetTable(&layer);
  layer.Forward({&this->indices_}, {&this->top_});
  ExpectValues(this->top_, {5, 6, 1, 2, 3, 4, 5, 6});
}

TYPED_TEST(EmbedLayerTest, BackwardAccumulatesIntoParameters) {
  EmbedLayer<TypeParam> layer(this->Param("num_output: 2 input_dim: 3"));
  layer.SetUp({&this->indices_}, {&this->top_});
  this->SetTable(&layer);
  layer.Forward({&this->indices_}, {&this->top_});
  SetDiffs(&this->top_, {1, 2, 3, 4, 5, 6, 7, 8});
  SetDiffs(layer.blobs()[0].get(), {10, 10, 10, 10, 10, 10});
  SetDiffs(layer.blobs()[1].get(), {10, 10});
  layer.Backward({&this->top_}, {false}, {&this->indices_});
  // Row 2 is used twice (top rows 0 and 3), rows 0 and 1 once.
  ExpectDiffs(*layer.blobs()[0], {13, 14, 15, 16, 18, 20});
  ExpectDiffs(*layer.blobs()[1], {26, 30});
}

TYPED_TEST(EmbedLayerTest, GradientOfWeightsAndBias) {
  Blob<TypeParam> indices({3, 2});
  for (int i = 0; i < indices.count(); ++i) {
    indices.mutable_cpu_data()[i] = static_cast<TypeParam>(this->rng_.Below(4));
  }
  EmbedLayer<TypeParam> layer(
      this->Param("num_output: 3 input_dim: 4 weight_filler { type: 'gaussian' std: 1 } "
                  "bias_filler { type: 'gaussian' std: 1 }"));
  GradientChecker<TypeParam> checker(1e-2, 1e-3);
  // check_bottom past the last bottom: only the parameters are checked.
  checker.CheckGradientExhaustive(&layer, {&indices}, {&this->top_}, 1);
}

TYPED_TEST(EmbedLayerTest, IndicesTakeNoGradient) {
  EmbedLayer<TypeParam> layer(this->Param("num_output: 2 input_dim: 3"));
  layer.SetUp({&this->indices_}, {&this->top_});
  EXPECT_FALSE(layer.AllowForceBackward(0));
  layer.Forward({&this->indices_}, {&this->top_});
  ExpectError([&] { layer.Backward({&this->top_}, {true}, {&this->indices_}); },
              {"layer 'emb' (Embed)"});
}

TYPED_TEST(EmbedLayerTest, RejectsIndicesOutOfRange) {
  EmbedLayer<TypeParam> layer(this->Param("num_output: 2 input_dim: 3"));
  layer.SetUp({&this->indices_}, {&this->top_});
  SetValues(&this->indices_, {0, 1, 3, 2});
  EXPECT_THROW(layer.Forward({&this->indices_}, {&this->top_}), Error);
  ExpectError([&] { layer.Forward({&this->indices_}, {&this->top_}); },
              {"layer 'emb' (Embed)", "element 2", "input_dim"});
  SetValues(&this->indices_, {0, -1, 1, 2});
  ExpectError([&] { layer.Forward({&this->indices_}, {&this->top_}); },
              {"layer 'emb' (Embed)", "element 1"});
  SetValues(&this->indices_, {0, 1, 1.5, 2});
  ExpectError([&] { layer.Forward({&this->indices_}, {&this->top_}); },
              {"layer 'emb' (Embed)", "element 2"});
}

TYPED_TEST(EmbedLayerTest, RejectsBadParameters) {
  EmbedLayer<TypeParam> no_output(this->Param("input_dim: 3"));
  ExpectError([&] { no_output.SetUp({&this->indices_}, {&this->top_}); },
              {"layer 'emb' (Embed)", "num_output"});
  EmbedLayer<TypeParam> no_input(this->Param("num_output: 2"));
  ExpectError([&] { no_input.SetUp({&this->indices_}, {&this->top_}); },
              {"layer 'emb' (Embed)", "input_dim"});
  LayerParameter param = this->Param("num_output: 2 input_dim: 3 bias_term: false");
  BlobProto* weights = param.add_blobs();
  weights->mutable_shape()->add_dim(2);
  weights->mutable_shape()->add_dim(3);
  for (int i = 0; i < 6; ++i) weights->add_data(i);
  EmbedLayer<TypeParam> wrong_shape(param);
  ExpectError([&] { wrong_shape.SetUp({&this->indices_}, {&this->top_}); },
              {"layer 'emb' (Embed)", "weight"});
}

TYPED_TEST(EmbedLayerTest, IsRegistered) {
  EXPECT_STREQ(
      LayerRegistry<TypeParam>::CreateLayer(this->Param("num_output: 1 input_dim: 1"))->type(),
      "Embed");
}

}  // namespace doppio
