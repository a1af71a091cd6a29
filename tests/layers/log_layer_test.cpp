#include "doppio/layers/log_layer.hpp"

#include <gtest/gtest.h>

#include <string>

#include "gradient_checker.hpp"
#include "neuron_test_helpers.hpp"
#include "test_util.hpp"

namespace doppio {

template <typename Dtype>
class LogLayerTest : public ::testing::Test {
 protected:
  static LayerParameter Param(double base, double scale, double shift) {
    LayerParameter param = ParseText<LayerParameter>("name: 'l' type: 'Log'");
    param.mutable_log_param()->set_base(static_cast<float>(base));
    param.mutable_log_param()->set_scale(static_cast<float>(scale));
    param.mutable_log_param()->set_shift(static_cast<float>(shift));
    return param;
  }

  void Run(const LayerParameter& param, const std::vector<double>& x, const std::vector<double>& y,
           const std::vector<double>& dx) {
    LogLayer<Dtype> layer(param);
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
TYPED_TEST_SUITE(LogLayerTest, TestDtypes);

TYPED_TEST(LogLayerTest, NaturalHandComputed) {
  this->Run(ParseText<LayerParameter>("name: 'l' type: 'Log'"), {1, 2.718281828, 0.5},
            {0, 1, -0.6931472}, {1, 0.3678794, 2});
}

TYPED_TEST(LogLayerTest, BaseScaleShiftHandComputed) {
  // log2(2x) and 2 / (2x ln2).
  this->Run(this->Param(2, 2, 0), {1, 2, 4}, {1, 2, 3}, {1.4426950, 0.7213475, 0.3606738});
  // log10(1 + 3x) and 3 / ((1 + 3x) ln10).
  this->Run(this->Param(10, 3, 1), {3, 33}, {1, 2}, {0.1302883, 0.0130288});
}

TYPED_TEST(LogLayerTest, BadBaseNamesLayerAndField) {
  using Dtype = TypeParam;
  for (double base : {0.0, 1.0, -2.0}) {
    LogLayer<Dtype> layer(this->Param(base, 1, 0));
    Blob<Dtype> bottom({2}), top;
    const std::string message = ErrorMessageOf([&] { layer.SetUp({&bottom}, {&top}); });
    EXPECT_CONTAINS(message, "layer 'l' (Log)");
    EXPECT_CONTAINS(message, "log_param.base");
  }
}

TYPED_TEST(LogLayerTest, Gradients) {
  using Dtype = TypeParam;
  // Inputs in [0.5, 2] keep shift + scale x positive in every case.
  const double cases[][3] = {{-1, 1, 0}, {-1, 0.5, 0.7}, {2, 1.3, 0.4}, {0.4, -0.8, 2}};
  for (const auto& c : cases) {
    SCOPED_TRACE(std::to_string(c[0]) + " " + std::to_string(c[1]) + " " + std::to_string(c[2]));
    LogLayer<Dtype> layer(this->Param(c[0], c[1], c[2]));
    Rng rng(91);
    Blob<Dtype> bottom({2, 3, 4, 5}), top;
    FillUniform<Dtype>(&bottom, rng, Dtype(0.5), Dtype(2));
    GradientChecker<Dtype> checker(1e-3, 1e-2);
    checker.CheckGradientEltwise(&layer, {&bottom}, {&top});
  }
}

TYPED_TEST(LogLayerTest, InPlace) {
  ExpectInPlaceMatches<TypeParam>(this->Param(-1, 1, 0), {2, 3, 4}, 0.5, 2);
  ExpectInPlaceMatches<TypeParam>(this->Param(2, 1.3, 0.4), {2, 3, 4}, 0.5, 2);
}

}  // namespace doppio
