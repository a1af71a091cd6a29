#include "doppio/layers/reduction_layer.hpp"

#include <gtest/gtest.h>

#include "doppio/core/layer_registry.hpp"
#include "gradient_checker.hpp"
#include "test_util.hpp"

namespace doppio {

template <typename Dtype>
class ReductionLayerTest : public ::testing::Test {
 protected:
  ReductionLayerTest() : bottom_({2, 3}) { SetValues(&bottom_, {1, -2, 3, -4, 5, -6}); }
  static LayerParameter Param(const std::string& reduction_param) {
    return ParseText<LayerParameter>("name: 'red' type: 'Reduction' reduction_param { " +
                                     reduction_param + " }");
  }
  // Runs the layer on bottom_ and returns the top values.
  void ExpectForward(const std::string& param, const std::vector<int>& shape,
                     const std::vector<double>& expected) {
    SCOPED_TRACE(param);
    ReductionLayer<Dtype> layer(Param(param));
    layer.SetUp({&bottom_}, {&top_});
    EXPECT_EQ(top_.shape(), shape);
    layer.Forward({&bottom_}, {&top_});
    ExpectValues(top_, expected);
  }
  void ExpectBackward(const std::string& param, const std::vector<double>& top_diff,
                      const std::vector<double>& expected) {
    SCOPED_TRACE(param);
    ReductionLayer<Dtype> layer(Param(param));
    layer.SetUp({&bottom_}, {&top_});
    layer.Forward({&bottom_}, {&top_});
    SetDiffs(&top_, top_diff);
    layer.Backward({&top_}, {true}, {&bottom_});
    ExpectDiffs(bottom_, expected);
  }
  Blob<Dtype> bottom_, top_;
  Rng rng_{1414};
};
TYPED_TEST_SUITE(ReductionLayerTest, TestDtypes);

TYPED_TEST(ReductionLayerTest, ForwardOverEverything) {
  const std::vector<int> scalar;
  this->ExpectForward("operation: SUM", scalar, {-3});
  this->ExpectForward("operation: ASUM", scalar, {21});
  this->ExpectForward("operation: SUMSQ", scalar, {91});
  this->ExpectForward("operation: MEAN", scalar, {-0.5});
  this->ExpectForward("operation: SUM coeff: 2", scalar, {-6});
  this->ExpectForward("operation: MEAN coeff: -3", scalar, {1.5});
}

TYPED_TEST(ReductionLayerTest, ForwardFromAxisOne) {
  const std::vector<int> shape{2};
  this->ExpectForward("operation: SUM axis: 1", shape, {2, -5});
  this->ExpectForward("operation: ASUM axis: 1", shape, {6, 15});
  this->ExpectForward("operation: SUMSQ axis: -1", shape, {14, 77});
  this->ExpectForward("operation: MEAN axis: 1", shape, {2.0 / 3, -5.0 / 3});
  this->ExpectForward("operation: SUM axis: 1 coeff: -1", shape, {-2, 5});
  this->ExpectForward("operation: SUMSQ axis: 1 coeff: 0.5", shape, {7, 38.5});
}

TYPED_TEST(ReductionLayerTest, BackwardFromAxisOne) {
  const std::vector<double> top_diff{1, 3};
  this->ExpectBackward("operation: SUM axis: 1 coeff: 2", top_diff, {2, 2, 2, 6, 6, 6});
  this->ExpectBackward("operation: ASUM axis: 1 coeff: 2", top_diff, {2, -2, 2, -6, 6, -6});
  // d/dx of coeff * x^2 is 2 coeff x.
  this->ExpectBackward("operation: SUMSQ axis: 1 coeff: 2", top_diff, {4, -8, 12, -48, 60, -72});
  this->ExpectBackward("operation: MEAN axis: 1 coeff: 3", top_diff, {1, 1, 1, 3, 3, 3});
}

TYPED_TEST(ReductionLayerTest, GradientEveryOperationAndAxis) {
  for (const char* op : {"SUM", "ASUM", "SUMSQ", "MEAN"}) {
    for (int axis : {0, 1, 2, -1}) {
      const std::string param = std::string("operation: ") + op + " axis: " + std::to_string(axis) +
                                " coeff: " + std::to_string(this->rng_.Uniform(-2, 2));
      SCOPED_TRACE(param);
      Blob<TypeParam> bottom({2, 3, 2, 2}), top;
      FillGaussian(&bottom, this->rng_);
      ReductionLayer<TypeParam> layer(this->Param(param));
      // ASUM has a kink at zero; skip the few inputs that lie within a step of it.
      GradientChecker<TypeParam> checker(1e-2, 1e-3, 1701, 0, 2e-2);
      checker.CheckGradientExhaustive(&layer, {&bottom}, {&top});
    }
  }
}

TYPED_TEST(ReductionLayerTest, RejectsBadAxis) {
  ReductionLayer<TypeParam> layer(this->Param("axis: 2"));
  ExpectError([&] { layer.SetUp({&this->bottom_}, {&this->top_}); },
              {"layer 'red' (Reduction)", "axis"});
}

TYPED_TEST(ReductionLayerTest, IsRegistered) {
  EXPECT_STREQ(LayerRegistry<TypeParam>::CreateLayer(this->Param(""))->type(), "Reduction");
}

}  // namespace doppio
