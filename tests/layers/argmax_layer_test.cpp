#include "doppio/layers/argmax_layer.hpp"

#include <gtest/gtest.h>

#include "doppio/core/layer_registry.hpp"
#include "test_util.hpp"

namespace doppio {

template <typename Dtype>
class ArgMaxLayerTest : public ::testing::Test {
 protected:
  ArgMaxLayerTest() : bottom_({2, 4}) { SetValues(&bottom_, {1, 5, 3, 2, 7, -1, 7.5, 0}); }
  static LayerParameter Param(const std::string& argmax_param) {
    return ParseText<LayerParameter>("name: 'am' type: 'ArgMax' argmax_param { " + argmax_param +
                                     " }");
  }
  void ExpectForward(const std::string& param, const std::vector<int>& shape,
                     const std::vector<double>& expected) {
    SCOPED_TRACE(param);
    ArgMaxLayer<Dtype> layer(Param(param));
    layer.SetUp({&bottom_}, {&top_});
    EXPECT_EQ(top_.shape(), shape);
    layer.Forward({&bottom_}, {&top_});
    ExpectValues(top_, expected);
  }
  Blob<Dtype> bottom_, top_;
};
TYPED_TEST_SUITE(ArgMaxLayerTest, TestDtypes);

TYPED_TEST(ArgMaxLayerTest, PerItemWithoutAxis) {
  // Rows: [1, 5, 3, 2] and [7, -1, 7.5, 0].
  this->ExpectForward("", {2, 1, 1}, {1, 2});
  this->ExpectForward("top_k: 2", {2, 1, 2}, {1, 2, 2, 0});
  // out_max_val: per item the top_k indices, then the top_k values.
  this->ExpectForward("out_max_val: true", {2, 2, 1}, {1, 5, 2, 7.5});
  this->ExpectForward("out_max_val: true top_k: 2", {2, 2, 2}, {1, 2, 5, 3, 2, 0, 7.5, 7});
  this->ExpectForward("top_k: 4", {2, 1, 4}, {1, 2, 3, 0, 2, 0, 3, 1});
}

TYPED_TEST(ArgMaxLayerTest, AlongAnAxis) {
  this->ExpectForward("axis: 1 top_k: 2", {2, 2}, {1, 2, 2, 0});
  this->ExpectForward("axis: 1 top_k: 2 out_max_val: true", {2, 2}, {5, 3, 7.5, 7});
  // Column by column: (1, 7), (5, -1), (3, 7.5), (2, 0).
  this->ExpectForward("axis: 0", {1, 4}, {1, 0, 1, 0});
  this->ExpectForward("axis: 0 out_max_val: true", {1, 4}, {7, 5, 7.5, 2});
  this->ExpectForward("axis: -2 top_k: 2", {2, 4}, {1, 0, 1, 0, 0, 1, 0, 1});
}

TYPED_TEST(ArgMaxLayerTest, FlattensAllButTheFirstAxis) {
  this->bottom_.Reshape({2, 2, 1, 2});
  SetValues(&this->bottom_, {1, 5, 3, 2, 7, -1, 7.5, 0});
  this->ExpectForward("top_k: 3", {2, 1, 3, 1}, {1, 2, 3, 2, 0, 3});
}

TYPED_TEST(ArgMaxLayerTest, MiddleAxisOfThreeD) {
  Blob<TypeParam> bottom({2, 3, 2}), top;
  // Item 0: rows (0, 9), (4, 1), (2, 5); item 1: rows (8, -3), (6, 0), (7, 2).
  SetValues(&bottom, {0, 9, 4, 1, 2, 5, 8, -3, 6, 0, 7, 2});
  ArgMaxLayer<TypeParam> layer(this->Param("axis: 1 top_k: 2"));
  layer.SetUp({&bottom}, {&top});
  EXPECT_EQ(top.shape(), std::vector<int>({2, 2, 2}));
  layer.Forward({&bottom}, {&top});
  ExpectValues(top, {1, 0, 2, 2, 0, 2, 2, 1});
}

TYPED_TEST(ArgMaxLayerTest, TiesListTheHigherIndexFirst) {
  SetValues(&this->bottom_, {4, 4, 1, 0, 2, 3, 3, 3});
  this->ExpectForward("top_k: 2", {2, 1, 2}, {1, 0, 3, 2});
}

TYPED_TEST(ArgMaxLayerTest, BackwardIsAnError) {
  ArgMaxLayer<TypeParam> layer(this->Param(""));
  layer.SetUp({&this->bottom_}, {&this->top_});
  layer.Forward({&this->bottom_}, {&this->top_});
  EXPECT_FALSE(layer.AllowForceBackward(0));
  EXPECT_THROW(layer.Backward({&this->top_}, {true}, {&this->bottom_}), Error);
  ExpectError([&] { layer.Backward({&this->top_}, {true}, {&this->bottom_}); },
              {"layer 'am' (ArgMax)"});
}

TYPED_TEST(ArgMaxLayerTest, RejectsBadTopK) {
  ArgMaxLayer<TypeParam> zero(this->Param("top_k: 0"));
  ExpectError([&] { zero.SetUp({&this->bottom_}, {&this->top_}); },
              {"layer 'am' (ArgMax)", "top_k"});
  ArgMaxLayer<TypeParam> big(this->Param("top_k: 5"));
  ExpectError([&] { big.SetUp({&this->bottom_}, {&this->top_}); },
              {"layer 'am' (ArgMax)", "top_k"});
  ArgMaxLayer<TypeParam> big_axis(this->Param("axis: 0 top_k: 3"));
  ExpectError([&] { big_axis.SetUp({&this->bottom_}, {&this->top_}); },
              {"layer 'am' (ArgMax)", "top_k"});
  ArgMaxLayer<TypeParam> axis(this->Param("axis: 2"));
  ExpectError([&] { axis.SetUp({&this->bottom_}, {&this->top_}); },
              {"layer 'am' (ArgMax)", "axis"});
}

TYPED_TEST(ArgMaxLayerTest, IsRegistered) {
  EXPECT_STREQ(LayerRegistry<TypeParam>::CreateLayer(this->Param(""))->type(), "ArgMax");
}

}  // namespace doppio
