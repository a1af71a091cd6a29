#include "doppio/layers/power_layer.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "gradient_checker.hpp"
#include "neuron_test_helpers.hpp"
#include "test_util.hpp"

namespace doppio {

template <typename Dtype>
class PowerLayerTest : public ::testing::Test {
 protected:
  static LayerParameter Param(double power, double scale, double shift) {
    LayerParameter param = ParseText<LayerParameter>("name: 'p' type: 'Power'");
    param.mutable_power_param()->set_power(static_cast<float>(power));
    param.mutable_power_param()->set_scale(static_cast<float>(scale));
    param.mutable_power_param()->set_shift(static_cast<float>(shift));
    return param;
  }

  // Gradient check on inputs uniform in [low, high].
  void CheckGradient(double power, double scale, double shift, double low, double high) {
    SCOPED_TRACE("power " + std::to_string(power) + " scale " + std::to_string(scale) + " shift " +
                 std::to_string(shift));
    PowerLayer<Dtype> layer(Param(power, scale, shift));
    Rng rng(71);
    Blob<Dtype> bottom({2, 3, 4, 5}), top;
    FillUniform<Dtype>(&bottom, rng, Dtype(low), Dtype(high));
    GradientChecker<Dtype> checker(1e-3, 1e-2);
    checker.CheckGradientEltwise(&layer, {&bottom}, {&top});
  }

  // Forward and, with a top gradient of 1, backward on the given inputs.
  void Run(const LayerParameter& param, const std::vector<double>& x, const std::vector<double>& y,
           const std::vector<double>& dx) {
    PowerLayer<Dtype> layer(param);
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
TYPED_TEST_SUITE(PowerLayerTest, TestDtypes);

TYPED_TEST(PowerLayerTest, SquareHandComputed) {
  // (1 + 3x)^2 and 6 (1 + 3x).
  this->Run(this->Param(2, 3, 1), {1, -1, 0.5}, {16, 4, 6.25}, {24, -12, 15});
}

TYPED_TEST(PowerLayerTest, SquareRootHandComputed) {
  // sqrt(x) and 1 / (2 sqrt(x)).
  this->Run(this->Param(0.5, 1, 0), {4, 9, 0.25}, {2, 3, 0.5}, {0.25, 1.0 / 6, 1});
}

TYPED_TEST(PowerLayerTest, GeneralHandComputed) {
  // (2 + 0.5x)^3 and 1.5 (2 + 0.5x)^2; at x = -4 the base is 0 and so is the gradient.
  this->Run(this->Param(3, 0.5, 2), {2, -2, -4}, {27, 1, 0}, {13.5, 1.5, 0});
}

TYPED_TEST(PowerLayerTest, CubeWithoutShiftAtZeroBase) {
  // x^3: the y / x shortcut is 0/0 at x = 0; the gradient there is 0.
  this->Run(this->Param(3, 1, 0), {0, 2, -1}, {0, 8, -1}, {0, 12, 3});
}

TYPED_TEST(PowerLayerTest, IdentityAndAffine) {
  this->Run(this->Param(1, 1, 0), {-1.5, 2}, {-1.5, 2}, {1, 1});
  this->Run(this->Param(1, -2, 0.5), {-1.5, 2}, {3.5, -3.5}, {-2, -2});
}

TYPED_TEST(PowerLayerTest, ConstantOutputs) {
  // Power 0 gives 1 everywhere, 0^0 included; scale 0 gives shift^power. No gradient.
  this->Run(this->Param(0, 2, -1), {0, 0.5, -3}, {1, 1, 1}, {0, 0, 0});
  this->Run(this->Param(3, 0, 2), {0, 0.5, -3}, {8, 8, 8}, {0, 0, 0});
}

TYPED_TEST(PowerLayerTest, Gradients) {
  // Non-integer powers need a positive base: inputs in [0.5, 2] with positive scale/shift.
  this->CheckGradient(0.37, 0.83, 2.4, 0.5, 2);
  this->CheckGradient(0.37, 0.83, 0, 0.5, 2);   // shift 0: the y / x path
  this->CheckGradient(-1.7, 1.2, 0.3, 0.5, 2);  // negative power
  this->CheckGradient(2, 0.83, -2.4, -2, 2);    // square: any sign
  this->CheckGradient(2, 0.34, 0, -2, 2);
  this->CheckGradient(3, -0.6, 0.2, -2, 2);  // integer power, negative bases
  this->CheckGradient(1, 0.83, -2.4, -2, 2);
  this->CheckGradient(0, 0.83, -2.4, -2, 2);
  this->CheckGradient(2.5, 0, 1.5, -2, 2);  // scale 0
}

TYPED_TEST(PowerLayerTest, InPlace) {
  const double cases[][3] = {{0.37, 0.83, 2.4}, {0.37, 1, 0}, {2, 0.83, -2.4}, {3, 1, 0},
                             {1, 0.5, 1},       {0, 2, 1},    {2, 0, 3}};
  for (const auto& c : cases) {
    SCOPED_TRACE(std::to_string(c[0]) + " " + std::to_string(c[1]) + " " + std::to_string(c[2]));
    ExpectInPlaceMatches<TypeParam>(this->Param(c[0], c[1], c[2]), {2, 3, 4}, 0.5, 2);
  }
}

}  // namespace doppio
