#include "doppio/layers/split_layer.hpp"

#include <gtest/gtest.h>

#include "doppio/core/layer_registry.hpp"
#include "gradient_checker.hpp"
#include "test_util.hpp"

namespace doppio {

template <typename Dtype>
class SplitLayerTest : public ::testing::Test {
 protected:
  SplitLayerTest() : bottom_({1, 2}) { SetValues(&bottom_, {3, -4}); }
  static LayerParameter Param() { return ParseText<LayerParameter>("name: 'fan' type: 'Split'"); }
  Blob<Dtype> bottom_, t0_, t1_, t2_;
  Rng rng_{123};
};
TYPED_TEST_SUITE(SplitLayerTest, TestDtypes);

TYPED_TEST(SplitLayerTest, TopsShareDataAndBackwardSumsDiffs) {
  SplitLayer<TypeParam> layer(this->Param());
  layer.SetUp({&this->bottom_}, {&this->t0_, &this->t1_, &this->t2_});
  layer.Forward({&this->bottom_}, {&this->t0_, &this->t1_, &this->t2_});
  for (auto* t : {&this->t0_, &this->t1_, &this->t2_}) {
    EXPECT_EQ(t->shape(), this->bottom_.shape());
    EXPECT_EQ(t->cpu_data(), this->bottom_.cpu_data());
    ExpectValues(*t, {3, -4});
  }
  SetDiffs(&this->t0_, {1, 2});
  SetDiffs(&this->t1_, {10, 20});
  SetDiffs(&this->t2_, {100, 200});
  layer.Backward({&this->t0_, &this->t1_, &this->t2_}, {true}, {&this->bottom_});
  ExpectDiffs(this->bottom_, {111, 222});
}

TYPED_TEST(SplitLayerTest, SingleTopCopiesDiff) {
  SplitLayer<TypeParam> layer(this->Param());
  layer.SetUp({&this->bottom_}, {&this->t0_});
  layer.Forward({&this->bottom_}, {&this->t0_});
  SetDiffs(&this->t0_, {7, 8});
  layer.Backward({&this->t0_}, {true}, {&this->bottom_});
  ExpectDiffs(this->bottom_, {7, 8});
}

TYPED_TEST(SplitLayerTest, Gradient) {
  Blob<TypeParam> bottom({2, 3, 2});
  FillGaussian(&bottom, this->rng_);
  SplitLayer<TypeParam> layer(this->Param());
  GradientChecker<TypeParam> checker(1e-2, 1e-3);
  checker.CheckGradientExhaustive(&layer, {&bottom}, {&this->t0_, &this->t1_, &this->t2_});
}

TYPED_TEST(SplitLayerTest, RejectsInPlace) {
  SplitLayer<TypeParam> layer(this->Param());
  ExpectError(
      [&] {
        layer.SetUp({&this->bottom_}, {&this->t0_, &this->bottom_});
      },
      {"layer 'fan' (Split)"});
}

TYPED_TEST(SplitLayerTest, IsRegistered) {
  EXPECT_STREQ(LayerRegistry<TypeParam>::CreateLayer(this->Param())->type(), "Split");
}

}  // namespace doppio
