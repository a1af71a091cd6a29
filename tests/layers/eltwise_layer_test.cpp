#include "doppio/layers/eltwise_layer.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <memory>

#include "doppio/core/layer_registry.hpp"
#include "gradient_checker.hpp"
#include "test_util.hpp"

namespace doppio {

template <typename Dtype>
class EltwiseLayerTest : public ::testing::Test {
 protected:
  EltwiseLayerTest() : a_({2, 2}), b_({2, 2}), c_({2, 2}) {
    SetValues(&a_, {1, -2, 3, 4});
    SetValues(&b_, {2, 5, -1, 0.5});
    SetValues(&c_, {3, 1, 2, -2});
  }
  static LayerParameter Param(const std::string& eltwise_param) {
    return ParseText<LayerParameter>("name: 'elt' type: 'Eltwise' eltwise_param { " +
                                     eltwise_param + " }");
  }
  std::vector<Blob<Dtype>*> Bottoms() { return {&a_, &b_, &c_}; }
  // Random bottoms of one shape.
  void MakeRandomBottoms(int num, const std::vector<int>& shape, Dtype low, Dtype high) {
    random_.clear();
    for (int i = 0; i < num; ++i) {
      random_.push_back(std::make_unique<Blob<Dtype>>(shape));
      FillUniform(random_.back().get(), rng_, low, high);
    }
  }
  std::vector<Blob<Dtype>*> RandomBottoms() {
    std::vector<Blob<Dtype>*> result;
    for (auto& b : random_) result.push_back(b.get());
    return result;
  }

  Blob<Dtype> a_, b_, c_, top_;
  std::vector<std::unique_ptr<Blob<Dtype>>> random_;
  Rng rng_{1618};
};
TYPED_TEST_SUITE(EltwiseLayerTest, TestDtypes);

TYPED_TEST(EltwiseLayerTest, ProdForwardAndBackward) {
  EltwiseLayer<TypeParam> layer(this->Param("operation: PROD"));
  layer.SetUp(this->Bottoms(), {&this->top_});
  layer.Forward(this->Bottoms(), {&this->top_});
  ExpectValues(this->top_, {6, -10, -6, -4});
  SetDiffs(&this->top_, {1, 1, 1, 2});
  layer.Backward({&this->top_}, {true, true, true}, this->Bottoms());
  ExpectDiffs(this->a_, {6, 5, -2, -2});   // b * c * top_diff
  ExpectDiffs(this->b_, {3, -2, 6, -16});  // a * c * top_diff
  ExpectDiffs(this->c_, {2, -10, -3, 4});  // a * b * top_diff
}

TYPED_TEST(EltwiseLayerTest, StableProdGradientSurvivesZeros) {
  SetValues(&this->a_, {0, -2, 3, 4});
  EltwiseLayer<TypeParam> layer(this->Param("operation: PROD stable_prod_grad: true"));
  layer.SetUp(this->Bottoms(), {&this->top_});
  layer.Forward(this->Bottoms(), {&this->top_});
  ExpectValues(this->top_, {0, -10, -6, -4});
  SetDiffs(&this->top_, {1, 1, 1, 1});
  layer.Backward({&this->top_}, {true, false, false}, this->Bottoms());
  ExpectDiffs(this->a_, {6, 5, -2, -1});
}

TYPED_TEST(EltwiseLayerTest, UnstableProdGradientDividesTheProduct) {
  EltwiseLayer<TypeParam> layer(this->Param("operation: PROD stable_prod_grad: false"));
  layer.SetUp(this->Bottoms(), {&this->top_});
  layer.Forward(this->Bottoms(), {&this->top_});
  SetDiffs(&this->top_, {1, 1, 1, 1});
  layer.Backward({&this->top_}, {false, true, false}, this->Bottoms());
  ExpectDiffs(this->b_, {3, -2, 6, -8});
}

TYPED_TEST(EltwiseLayerTest, SumWithCoefficients) {
  EltwiseLayer<TypeParam> layer(this->Param("operation: SUM coeff: 1 coeff: -2 coeff: 0.5"));
  layer.SetUp(this->Bottoms(), {&this->top_});
  layer.Forward(this->Bottoms(), {&this->top_});
  ExpectValues(this->top_, {-1.5, -11.5, 6, 2});
  SetDiffs(&this->top_, {1, 2, 3, 4});
  layer.Backward({&this->top_}, {true, true, true}, this->Bottoms());
  ExpectDiffs(this->a_, {1, 2, 3, 4});
  ExpectDiffs(this->b_, {-2, -4, -6, -8});
  ExpectDiffs(this->c_, {0.5, 1, 1.5, 2});
}

TYPED_TEST(EltwiseLayerTest, SumDefaultsToPlainSum) {
  EltwiseLayer<TypeParam> layer(this->Param(""));
  layer.SetUp(this->Bottoms(), {&this->top_});
  layer.Forward(this->Bottoms(), {&this->top_});
  ExpectValues(this->top_, {6, 4, 4, 2.5});
}

TYPED_TEST(EltwiseLayerTest, MaxRoutesGradientToTheWinner) {
  EltwiseLayer<TypeParam> layer(this->Param("operation: MAX"));
  layer.SetUp(this->Bottoms(), {&this->top_});
  layer.Forward(this->Bottoms(), {&this->top_});
  ExpectValues(this->top_, {3, 5, 3, 4});
  SetDiffs(&this->top_, {1, 2, 3, 4});
  layer.Backward({&this->top_}, {true, true, true}, this->Bottoms());
  ExpectDiffs(this->a_, {0, 0, 3, 4});
  ExpectDiffs(this->b_, {0, 2, 0, 0});
  ExpectDiffs(this->c_, {1, 0, 0, 0});
}

// In place (top = bottom 0), bottom 0's diff is the top diff: the other bottoms must still
// see the top's gradient, not bottom 0's.
TYPED_TEST(EltwiseLayerTest, SumInPlaceKeepsTopDiffForOtherBottoms) {
  EltwiseLayer<TypeParam> layer(this->Param("operation: SUM coeff: 0.5 coeff: -2 coeff: 1"));
  layer.SetUp(this->Bottoms(), {&this->a_});
  layer.Forward(this->Bottoms(), {&this->a_});
  ExpectValues(this->a_, {-0.5, -10, 5.5, -1});
  SetDiffs(&this->a_, {1, 2, 3, 4});
  layer.Backward({&this->a_}, {true, true, true}, this->Bottoms());
  ExpectDiffs(this->a_, {0.5, 1, 1.5, 2});
  ExpectDiffs(this->b_, {-2, -4, -6, -8});
  ExpectDiffs(this->c_, {1, 2, 3, 4});
}

TYPED_TEST(EltwiseLayerTest, MaxInPlaceKeepsTopDiffForOtherBottoms) {
  EltwiseLayer<TypeParam> layer(this->Param("operation: MAX"));
  layer.SetUp(this->Bottoms(), {&this->a_});
  layer.Forward(this->Bottoms(), {&this->a_});
  ExpectValues(this->a_, {3, 5, 3, 4});
  SetDiffs(&this->a_, {1, 2, 3, 4});
  layer.Backward({&this->a_}, {true, true, true}, this->Bottoms());
  ExpectDiffs(this->a_, {0, 0, 3, 4});
  ExpectDiffs(this->b_, {0, 2, 0, 0});
  ExpectDiffs(this->c_, {1, 0, 0, 0});
}

TYPED_TEST(EltwiseLayerTest, ProdInPlaceBackwardIsAnError) {
  EltwiseLayer<TypeParam> layer(this->Param("operation: PROD"));
  layer.SetUp(this->Bottoms(), {&this->a_});
  layer.Forward(this->Bottoms(), {&this->a_});
  SetDiffs(&this->a_, {1, 1, 1, 1});
  ExpectError(
      [&] {
        layer.Backward({&this->a_}, {false, true, false}, this->Bottoms());
      },
      {"layer 'elt' (Eltwise)", "PROD in place"});
}

TYPED_TEST(EltwiseLayerTest, GradientSumWithCoefficients) {
  this->MakeRandomBottoms(3, {2, 3, 2}, -1, 1);
  EltwiseLayer<TypeParam> layer(this->Param("operation: SUM coeff: 1.5 coeff: -0.7 coeff: 2"));
  GradientChecker<TypeParam> checker(1e-2, 1e-3);
  checker.CheckGradientExhaustive(&layer, this->RandomBottoms(), {&this->top_});
}

TYPED_TEST(EltwiseLayerTest, GradientProdStable) {
  this->MakeRandomBottoms(3, {2, 3, 2}, -1.5, 1.5);
  EltwiseLayer<TypeParam> layer(this->Param("operation: PROD stable_prod_grad: true"));
  GradientChecker<TypeParam> checker(1e-2, 1e-3);
  checker.CheckGradientExhaustive(&layer, this->RandomBottoms(), {&this->top_});
}

TYPED_TEST(EltwiseLayerTest, GradientProdUnstable) {
  // Division by the bottom needs inputs away from zero.
  this->MakeRandomBottoms(3, {2, 3, 2}, 0.5, 1.5);
  EltwiseLayer<TypeParam> layer(this->Param("operation: PROD stable_prod_grad: false"));
  GradientChecker<TypeParam> checker(1e-2, 1e-3);
  checker.CheckGradientExhaustive(&layer, this->RandomBottoms(), {&this->top_});
}

TYPED_TEST(EltwiseLayerTest, GradientMax) {
  // Well-separated inputs: at each position the bottoms take distinct levels 0, 1, 2 (in a
  // random order) plus noise well below the gap, so the step never crosses a kink.
  this->MakeRandomBottoms(3, {2, 3, 2}, -0.2, 0.2);
  auto bottoms = this->RandomBottoms();
  for (int j = 0; j < bottoms[0]->count(); ++j) {
    int order[3] = {0, 1, 2};
    for (int i = 2; i > 0; --i) std::swap(order[i], order[this->rng_.Below(i + 1)]);
    for (int i = 0; i < 3; ++i) bottoms[i]->mutable_cpu_data()[j] += order[i];
  }
  EltwiseLayer<TypeParam> layer(this->Param("operation: MAX"));
  GradientChecker<TypeParam> checker(1e-2, 1e-3);
  checker.CheckGradientExhaustive(&layer, bottoms, {&this->top_});
}

TYPED_TEST(EltwiseLayerTest, MismatchedShapesNameLayerBottomAndShapes) {
  Blob<TypeParam> odd({2, 3});
  EltwiseLayer<TypeParam> layer(this->Param("operation: SUM"));
  EXPECT_THROW(layer.SetUp({&this->a_, &this->b_, &odd}, {&this->top_}), Error);
  ExpectError(
      [&] {
        layer.SetUp({&this->a_, &this->b_, &odd}, {&this->top_});
      },
      {"layer 'elt' (Eltwise)", "bottom[2]", "2 3 (6)", "2 2 (4)"});
  Blob<TypeParam> flat({4});
  EltwiseLayer<TypeParam> prod(this->Param("operation: PROD"));
  ExpectError(
      [&] {
        prod.SetUp({&this->a_, &flat}, {&this->top_});
      },
      {"layer 'elt' (Eltwise)", "bottom[1]", "4 (4)"});
}

TYPED_TEST(EltwiseLayerTest, RejectsBadCoefficients) {
  EltwiseLayer<TypeParam> too_few(this->Param("operation: SUM coeff: 1 coeff: 2"));
  ExpectError([&] { too_few.SetUp(this->Bottoms(), {&this->top_}); },
              {"layer 'elt' (Eltwise)", "coeff"});
  EltwiseLayer<TypeParam> prod(this->Param("operation: PROD coeff: 1 coeff: 2 coeff: 3"));
  ExpectError([&] { prod.SetUp(this->Bottoms(), {&this->top_}); },
              {"layer 'elt' (Eltwise)", "coeff"});
}

TYPED_TEST(EltwiseLayerTest, IsRegistered) {
  EXPECT_STREQ(LayerRegistry<TypeParam>::CreateLayer(this->Param(""))->type(), "Eltwise");
}

}  // namespace doppio
