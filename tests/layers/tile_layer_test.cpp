#include "doppio/layers/tile_layer.hpp"

#include <gtest/gtest.h>

#include "doppio/core/layer_registry.hpp"
#include "gradient_checker.hpp"
#include "test_util.hpp"

namespace doppio {

template <typename Dtype>
class TileLayerTest : public ::testing::Test {
 protected:
  TileLayerTest() : bottom_({2, 2}) { SetValues(&bottom_, {1, 2, 3, 4}); }
  static LayerParameter Param(const std::string& tile_param) {
    return ParseText<LayerParameter>("name: 'tile' type: 'Tile' tile_param { " + tile_param + " }");
  }
  Blob<Dtype> bottom_, top_;
  Rng rng_{2718};
};
TYPED_TEST_SUITE(TileLayerTest, TestDtypes);

TYPED_TEST(TileLayerTest, TilesAlongChannels) {
  TileLayer<TypeParam> layer(this->Param("tiles: 3"));
  layer.SetUp({&this->bottom_}, {&this->top_});
  EXPECT_EQ(this->top_.shape(), std::vector<int>({2, 6}));
  layer.Forward({&this->bottom_}, {&this->top_});
  ExpectValues(this->top_, {1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4});
  SetDiffs(&this->top_, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
  layer.Backward({&this->top_}, {true}, {&this->bottom_});
  ExpectDiffs(this->bottom_, {9, 12, 27, 30});
}

TYPED_TEST(TileLayerTest, TilesAlongNum) {
  TileLayer<TypeParam> layer(this->Param("axis: 0 tiles: 2"));
  layer.SetUp({&this->bottom_}, {&this->top_});
  EXPECT_EQ(this->top_.shape(), std::vector<int>({4, 2}));
  layer.Forward({&this->bottom_}, {&this->top_});
  ExpectValues(this->top_, {1, 2, 3, 4, 1, 2, 3, 4});
  SetDiffs(&this->top_, {1, 2, 3, 4, 10, 20, 30, 40});
  layer.Backward({&this->top_}, {true}, {&this->bottom_});
  ExpectDiffs(this->bottom_, {11, 22, 33, 44});
}

TYPED_TEST(TileLayerTest, OneTileCopies) {
  TileLayer<TypeParam> layer(this->Param("axis: -1 tiles: 1"));
  layer.SetUp({&this->bottom_}, {&this->top_});
  layer.Forward({&this->bottom_}, {&this->top_});
  ExpectValues(this->top_, {1, 2, 3, 4});
}

TYPED_TEST(TileLayerTest, Gradient) {
  for (const char* param : {"axis: 0 tiles: 2", "axis: 1 tiles: 3", "axis: -1 tiles: 2"}) {
    SCOPED_TRACE(param);
    Blob<TypeParam> bottom({2, 3, 2}), top;
    FillGaussian(&bottom, this->rng_);
    TileLayer<TypeParam> layer(this->Param(param));
    GradientChecker<TypeParam> checker(1e-2, 1e-3);
    checker.CheckGradientExhaustive(&layer, {&bottom}, {&top});
  }
}

TYPED_TEST(TileLayerTest, RejectsBadTiles) {
  TileLayer<TypeParam> zero(this->Param("tiles: 0"));
  EXPECT_THROW(zero.SetUp({&this->bottom_}, {&this->top_}), Error);
  ExpectError([&] { zero.SetUp({&this->bottom_}, {&this->top_}); },
              {"layer 'tile' (Tile)", "tiles"});
  TileLayer<TypeParam> negative(this->Param("tiles: -2"));
  ExpectError([&] { negative.SetUp({&this->bottom_}, {&this->top_}); },
              {"layer 'tile' (Tile)", "tiles"});
  TileLayer<TypeParam> missing(this->Param("axis: 1"));
  ExpectError([&] { missing.SetUp({&this->bottom_}, {&this->top_}); },
              {"layer 'tile' (Tile)", "tiles"});
  TileLayer<TypeParam> axis(this->Param("axis: 2 tiles: 2"));
  ExpectError([&] { axis.SetUp({&this->bottom_}, {&this->top_}); },
              {"layer 'tile' (Tile)", "axis"});
}

TYPED_TEST(TileLayerTest, IsRegistered) {
  EXPECT_STREQ(LayerRegistry<TypeParam>::CreateLayer(this->Param("tiles: 2"))->type(), "Tile");
}

}  // namespace doppio
