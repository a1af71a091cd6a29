#include "doppio/layers/inner_product_layer.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "doppio/util/thread_pool.hpp"
#include "gradient_checker.hpp"
#include "test_util.hpp"

namespace doppio {

template <typename Dtype>
class InnerProductLayerTest : public ::testing::Test {
 protected:
  LayerParameter Param(const std::string& ip) {
    return ParseText<LayerParameter>(
        "name: 'fc' type: 'InnerProduct' inner_product_param { " + ip +
        " weight_filler { type: 'gaussian' std: 0.5 } bias_filler { type: 'gaussian' std: 0.5 } "
        "}");
  }
  Rng rng_{77};
};

TYPED_TEST_SUITE(InnerProductLayerTest, TestDtypes);

TYPED_TEST(InnerProductLayerTest, HandComputedSmallCase) {
  // [[1, 2, 3], [4, 5, 6]] * [[1, 0, -1], [2, 1, 0]]^T + [0.5, -1]
  //   = [[1 - 3 + 0.5, 2 + 2 - 1], [4 - 6 + 0.5, 8 + 5 - 1]] = [[-1.5, 3], [-1.5, 12]].
  Blob<TypeParam> bottom({2, 3}), top;
  for (int i = 0; i < 6; ++i) bottom.mutable_cpu_data()[i] = i + 1;
  std::vector<Blob<TypeParam>*> b = {&bottom}, t = {&top};
  const TypeParam expected[4] = {-1.5, 3, -1.5, 12};
  for (const bool transpose : {false, true}) {
    InnerProductLayer<TypeParam> layer(
        this->Param(std::string("num_output: 2 transpose: ") + (transpose ? "true" : "false")));
    layer.SetUp(b, t);
    ASSERT_EQ(layer.blobs()[0]->shape(),
              transpose ? std::vector<int>({3, 2}) : std::vector<int>({2, 3}));
    const TypeParam w[6] = {1, 0, -1, 2, 1, 0};    // (2, 3)
    const TypeParam w_t[6] = {1, 2, 0, 1, -1, 0};  // (3, 2)
    std::copy(transpose ? w_t : w, (transpose ? w_t : w) + 6, layer.blobs()[0]->mutable_cpu_data());
    layer.blobs()[1]->mutable_cpu_data()[0] = 0.5;
    layer.blobs()[1]->mutable_cpu_data()[1] = -1;
    layer.Forward(b, t);
    ASSERT_EQ(top.shape(), std::vector<int>({2, 2}));
    for (int i = 0; i < 4; ++i) EXPECT_NEAR(top.cpu_data()[i], expected[i], 1e-6) << i;
  }
}

TYPED_TEST(InnerProductLayerTest, AxisSelectsTheFlattenedAxes) {
  Blob<TypeParam> bottom({2, 3, 4}), top;
  FillGaussian(&bottom, this->rng_);
  std::vector<Blob<TypeParam>*> b = {&bottom}, t = {&top};
  for (const int axis : {1, 2, -1, 0}) {
    InnerProductLayer<TypeParam> layer(this->Param("num_output: 5 axis: " + std::to_string(axis)));
    layer.SetUp(b, t);
    const int a = axis < 0 ? axis + 3 : axis;
    const int m = bottom.count(0, a), k = bottom.count(a);
    std::vector<int> shape(bottom.shape().begin(), bottom.shape().begin() + a);
    shape.push_back(5);
    ASSERT_EQ(top.shape(), shape) << "axis " << axis;
    layer.Forward(b, t);
    const TypeParam* w = layer.blobs()[0]->cpu_data();
    const TypeParam* bias = layer.blobs()[1]->cpu_data();
    for (int i = 0; i < m; ++i)
      for (int j = 0; j < 5; ++j) {
        double sum = bias[j];
        for (int l = 0; l < k; ++l) sum += bottom.cpu_data()[i * k + l] * w[j * k + l];
        EXPECT_NEAR(top.cpu_data()[i * 5 + j], sum, 1e-4) << "axis " << axis;
      }
  }
}

TYPED_TEST(InnerProductLayerTest, LegacyWeightShapeAccepted) {
  LayerParameter param = ParseText<LayerParameter>(
      "name: 'fc' type: 'InnerProduct' inner_product_param { num_output: 2 bias_term: false }");
  BlobProto* w = param.add_blobs();
  for (int d : {1, 1, 2, 3}) w->mutable_shape()->add_dim(d);
  for (int i = 0; i < 6; ++i) w->add_data(i == 0 || i == 4 ? 1 : 0);  // picks x0 and x1
  Blob<TypeParam> bottom({1, 3}), top;
  for (int i = 0; i < 3; ++i) bottom.mutable_cpu_data()[i] = 10 + i;
  std::vector<Blob<TypeParam>*> b = {&bottom}, t = {&top};
  InnerProductLayer<TypeParam> layer(param);
  layer.SetUp(b, t);
  EXPECT_EQ(layer.blobs()[0]->shape(), std::vector<int>({2, 3}));
  layer.Forward(b, t);
  EXPECT_EQ(top.cpu_data()[0], 10);
  EXPECT_EQ(top.cpu_data()[1], 11);
}

TYPED_TEST(InnerProductLayerTest, Gradient) {
  Blob<TypeParam> bottom({2, 3, 2, 2}), top;
  FillGaussian(&bottom, this->rng_);
  std::vector<Blob<TypeParam>*> b = {&bottom}, t = {&top};
  InnerProductLayer<TypeParam> layer(this->Param("num_output: 4"));
  GradientChecker<TypeParam> checker(1e-2, 1e-3);
  checker.CheckGradientExhaustive(&layer, b, t);
}

TYPED_TEST(InnerProductLayerTest, GradientTranspose) {
  Blob<TypeParam> bottom({3, 5}), top;
  FillGaussian(&bottom, this->rng_);
  std::vector<Blob<TypeParam>*> b = {&bottom}, t = {&top};
  InnerProductLayer<TypeParam> layer(this->Param("num_output: 4 transpose: true"));
  GradientChecker<TypeParam> checker(1e-2, 1e-3);
  checker.CheckGradientExhaustive(&layer, b, t);
}

TYPED_TEST(InnerProductLayerTest, GradientAxisTwoNoBias) {
  Blob<TypeParam> bottom({2, 3, 4}), top;
  FillGaussian(&bottom, this->rng_);
  std::vector<Blob<TypeParam>*> b = {&bottom}, t = {&top};
  InnerProductLayer<TypeParam> layer(this->Param("num_output: 3 axis: 2 bias_term: false"));
  GradientChecker<TypeParam> checker(1e-2, 1e-3);
  checker.CheckGradientExhaustive(&layer, b, t);
}

TYPED_TEST(InnerProductLayerTest, GradientAxisTwoTransposed) {
  Blob<TypeParam> bottom({2, 2, 3}), top;
  FillGaussian(&bottom, this->rng_);
  std::vector<Blob<TypeParam>*> b = {&bottom}, t = {&top};
  InnerProductLayer<TypeParam> layer(this->Param("num_output: 2 axis: -1 transpose: true"));
  GradientChecker<TypeParam> checker(1e-2, 1e-3);
  checker.CheckGradientExhaustive(&layer, b, t);
}

TYPED_TEST(InnerProductLayerTest, ThreadedMatchesSerial) {
  // Threads split the products by output columns; every output is still one whole sum, so
  // the results agree with the serial ones up to the BLAS kernel's rounding.
  const double tolerance = std::is_same<TypeParam, float>::value ? 1e-5 : 1e-12;
  for (const bool transpose : {false, true}) {
    SCOPED_TRACE(transpose ? "transposed" : "not transposed");
    Blob<TypeParam> bottom({5, 3, 10, 10}), top_diff({5, 200});
    FillGaussian(&bottom, this->rng_);
    FillGaussian(&top_diff, this->rng_);
    const std::string text = std::string(
                                 "name: 'ip' type: 'InnerProduct' inner_product_param { "
                                 "num_output: 200 transpose: ") +
                             (transpose ? "true" : "false") +
                             " weight_filler { type: 'gaussian' } bias_filler { type: "
                             "'gaussian' } }";
    std::vector<std::vector<TypeParam>> results[2];
    for (int run = 0; run < 2; ++run) {
      ThreadPool pool(run == 0 ? 1 : 3);
      ThreadPool::Scope use(&pool);
      Blob<TypeParam> top, in;
      in.CopyFrom(bottom, false, true);
      std::vector<Blob<TypeParam>*> b = {&in}, t = {&top};
      InnerProductLayer<TypeParam> layer(ParseText<LayerParameter>(text));
      layer.set_seed(7);
      layer.SetUp(b, t);
      for (auto& blob : layer.blobs())
        cpu_set(blob->count(), TypeParam(0), blob->mutable_cpu_diff());
      layer.Forward(b, t);
      cpu_copy(top.count(), top_diff.cpu_data(), top.mutable_cpu_diff());
      layer.Backward(t, {true}, b);
      for (const Blob<TypeParam>* blob : {&top, &in}) {
        const TypeParam* v = blob == &top ? blob->cpu_data() : blob->cpu_diff();
        results[run].emplace_back(v, v + blob->count());
      }
      for (auto& blob : layer.blobs()) {
        results[run].emplace_back(blob->cpu_diff(), blob->cpu_diff() + blob->count());
      }
    }
    ASSERT_EQ(results[0].size(), results[1].size());
    for (size_t k = 0; k < results[0].size(); ++k) {
      double scale = 1;
      for (TypeParam v : results[0][k]) scale = std::max<double>(scale, std::abs(v));
      for (size_t i = 0; i < results[0][k].size(); ++i) {
        ASSERT_NEAR(results[0][k][i], results[1][k][i], tolerance * scale) << k << " " << i;
      }
    }
  }
}

TYPED_TEST(InnerProductLayerTest, EmptyBatchIsFine) {
  Blob<TypeParam> bottom({0, 3}), top;
  std::vector<Blob<TypeParam>*> b = {&bottom}, t = {&top};
  InnerProductLayer<TypeParam> layer(this->Param("num_output: 2"));
  layer.SetUp(b, t);
  layer.Forward(b, t);
  EXPECT_EQ(top.shape(), std::vector<int>({0, 2}));
  cpu_set(layer.blobs()[0]->count(), TypeParam(0), layer.blobs()[0]->mutable_cpu_diff());
  layer.Backward(t, {true}, b);
  EXPECT_EQ(layer.blobs()[0]->asum_diff(), 0);
}

TYPED_TEST(InnerProductLayerTest, RejectsBadInput) {
  using ::testing::AllOf;
  using ::testing::HasSubstr;
  const auto named = HasSubstr("layer 'fc' (InnerProduct)");
  Blob<TypeParam> bottom({2, 3, 4}), top;
  std::vector<Blob<TypeParam>*> b = {&bottom}, t = {&top};
  InnerProductLayer<TypeParam> layer(this->Param("num_output: 2"));
  layer.SetUp(b, t);
  // A different batch size is fine; a different K is not.
  bottom.Reshape({5, 3, 4});
  layer.Forward(b, t);
  EXPECT_EQ(top.shape(), std::vector<int>({5, 2}));
  bottom.Reshape({2, 3, 5});
  try {
    layer.Forward(b, t);
    ADD_FAILURE() << "changed K accepted";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), AllOf(named, HasSubstr("15"), HasSubstr("12")));
  }
  const auto err = [&](const std::string& p, const std::vector<int>& shape) -> std::string {
    Blob<TypeParam> in(shape), out;
    std::vector<Blob<TypeParam>*> bb = {&in}, tt = {&out};
    InnerProductLayer<TypeParam> l(this->Param(p));
    try {
      l.SetUp(bb, tt);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_THAT(err("num_output: 0", {2, 3}), AllOf(named, HasSubstr("num_output")));
  EXPECT_THAT(err("num_output: 2 axis: 2", {2, 3}), AllOf(named, HasSubstr("axis")));
  EXPECT_THAT(err("num_output: 2", {2, 0, 3}), named);
  EXPECT_EQ(err("num_output: 2", {0, 3}), "");
}

}  // namespace doppio
