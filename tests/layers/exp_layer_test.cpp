#include "doppio/layers/exp_layer.hpp"

#include <gtest/gtest.h>

#include <string>

#include "gradient_checker.hpp"
#include "neuron_test_helpers.hpp"
#include "test_util.hpp"

namespace doppio {

template <typename Dtype>
class ExpLayerTest : public ::testing::Test {
 protected:
  static LayerParameter Param(double base, double scale, double shift) {
    LayerParameter param = ParseText<LayerParameter>("name: 'x' type: 'Exp'");
    param.mutable_exp_param()->set_base(static_cast<float>(base));
    param.mutable_exp_param()->set_scale(static_cast<float>(scale));
    param.mutable_exp_param()->set_shift(static_cast<float>(shift));
    return param;
  }

  void Run(const LayerParameter& param, const std::vector<double>& x, const std::vector<double>& y,
           const std::vector<double>& dx) {
    ExpLayer<Dtype> layer(param);
    Blob<Dtype> bottom({static_cast<int>(x.size())}), top;
    SetValues(&bottom, x);
    layer.SetUp({&bottom}, {&top});
    layer.Forward({&bottom}, {&top});
    ExpectValues(top, y);
    cpu_set(top.count(), Dtype(1), top.mutable_cpu_diff());
    layer.Backward({&top}, {true}, {&bottom});
    ExpectValues(bottom, dx, true);
  }
};
TYPED_TEST_SUITE(ExpLayerTest, TestDtypes);

TYPED_TEST(ExpLayerTest, NaturalHandComputed) {
  this->Run(ParseText<LayerParameter>("name: 'x' type: 'Exp'"), {0, 1, -1},
            {1, 2.7182818, 0.3678794}, {1, 2.7182818, 0.3678794});
}

TYPED_TEST(ExpLayerTest, BaseScaleShiftHandComputed) {
  // 2^(1 + 3x) and 3 ln2 2^(1 + 3x).
  this->Run(this->Param(2, 3, 1), {0, 1, -1.0 / 3}, {2, 16, 1}, {4.1588831, 33.2710647, 2.0794415});
  // e^(0.5 - 2x) with base -1.
  this->Run(this->Param(-1, -2, 0.5), {0, 1}, {1.6487213, 0.2231302}, {-3.2974425, -0.4462603});
}

TYPED_TEST(ExpLayerTest, BadBaseNamesLayerAndField) {
  using Dtype = TypeParam;
  for (double base : {0.0, -2.0}) {
    ExpLayer<Dtype> layer(this->Param(base, 1, 0));
    Blob<Dtype> bottom({2}), top;
    const std::string message = ErrorMessageOf([&] { layer.SetUp({&bottom}, {&top}); });
    EXPECT_CONTAINS(message, "layer 'x' (Exp)");
    EXPECT_CONTAINS(message, "exp_param.base");
  }
}

TYPED_TEST(ExpLayerTest, Gradients) {
  using Dtype = TypeParam;
  const double cases[][3] = {{-1, 1, 0}, {-1, 0.5, -0.7}, {2, 1.3, 0.4}, {0.4, -0.8, 0.9}};
  for (const auto& c : cases) {
    SCOPED_TRACE(std::to_string(c[0]) + " " + std::to_string(c[1]) + " " + std::to_string(c[2]));
    ExpLayer<Dtype> layer(this->Param(c[0], c[1], c[2]));
    Rng rng(81);
    Blob<Dtype> bottom({2, 3, 4, 5}), top;
    FillGaussian<Dtype>(&bottom, rng);
    GradientChecker<Dtype> checker(1e-2, 1e-3);
    checker.CheckGradientEltwise(&layer, {&bottom}, {&top});
  }
}

TYPED_TEST(ExpLayerTest, InPlace) {
  ExpectInPlaceMatches<TypeParam>(this->Param(2, 1.3, 0.4), {2, 3, 4}, -2, 2);
}

}  // namespace doppio
