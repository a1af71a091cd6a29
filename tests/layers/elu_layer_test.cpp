#include "doppio/layers/elu_layer.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "gradient_checker.hpp"
#include "neuron_test_helpers.hpp"
#include "test_util.hpp"

namespace doppio {

template <typename Dtype>
class ELULayerTest : public ::testing::Test {};
TYPED_TEST_SUITE(ELULayerTest, TestDtypes);

TYPED_TEST(ELULayerTest, ForwardBackwardHandComputed) {
  using Dtype = TypeParam;
  ELULayer<Dtype> layer(
      ParseText<LayerParameter>("name: 'e' type: 'ELU' elu_param { alpha: 0.5 }"));
  Blob<Dtype> bottom({4}), top;
  SetValues(&bottom, {-1, 0, 2, -3});
  layer.SetUp({&bottom}, {&top});
  layer.Forward({&bottom}, {&top});
  // 0.5 * (e^-1 - 1) = -0.3160603, 0.5 * (e^-3 - 1) = -0.4751065.
  ExpectValues(top, {-0.3160603, 0, 2, -0.4751065});
  SetDiffs(&top, {1, 1, 2, 2});
  layer.Backward({&top}, {true}, {&bottom});
  // 0.5 * e^-1 = 0.1839397; at 0 the left derivative alpha; 2 * 0.5 * e^-3 = 0.0497871.
  ExpectValues(bottom, {0.1839397, 0.5, 2, 0.0497871}, true);
}

TYPED_TEST(ELULayerTest, DefaultAlphaIsOne) {
  using Dtype = TypeParam;
  ELULayer<Dtype> layer(ParseText<LayerParameter>("name: 'e' type: 'ELU'"));
  Blob<Dtype> bottom({1}), top;
  SetValues(&bottom, {-2});
  layer.SetUp({&bottom}, {&top});
  layer.Forward({&bottom}, {&top});
  ExpectValues(top, {-0.8646647});  // e^-2 - 1
}

TYPED_TEST(ELULayerTest, Gradient) {
  using Dtype = TypeParam;
  Rng rng(21);
  LayerParameter param = ParseText<LayerParameter>("name: 'e' type: 'ELU'");
  param.mutable_elu_param()->set_alpha(static_cast<float>(rng.Uniform(0.2, 2.0)));
  ELULayer<Dtype> layer(param);
  Blob<Dtype> bottom({2, 3, 4, 5}), top;
  FillGaussian<Dtype>(&bottom, rng);
  // The derivative jumps from alpha to 1 at 0.
  GradientChecker<Dtype> checker(1e-2, 1e-3, 1701, 0, 0.01);
  checker.CheckGradientEltwise(&layer, {&bottom}, {&top});
}

TYPED_TEST(ELULayerTest, InPlace) {
  for (const char* alpha : {"1", "0.3", "0", "-0.5"}) {
    SCOPED_TRACE(alpha);
    ExpectInPlaceMatches<TypeParam>(
        ParseText<LayerParameter>(std::string("name: 'e' type: 'ELU' elu_param { alpha: ") + alpha +
                                  " }"),
        {2, 3, 4}, -2, 2, true);
  }
}

}  // namespace doppio
