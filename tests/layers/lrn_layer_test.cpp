#include "doppio/layers/lrn_layer.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "doppio/util/thread_pool.hpp"
#include "gradient_checker.hpp"
#include "test_util.hpp"

namespace doppio {

namespace {

// LRN straight from its definition, one output at a time.
template <typename Dtype>
void NaiveLRN(const Blob<Dtype>& in, int size, double alpha, double beta, double k, bool across,
              Blob<Dtype>* out) {
  const int pre = (size - 1) / 2;
  for (int n = 0; n < in.shape(0); ++n)
    for (int c = 0; c < in.shape(1); ++c)
      for (int h = 0; h < in.shape(2); ++h)
        for (int w = 0; w < in.shape(3); ++w) {
          double sum = 0;
          if (across) {
            for (int j = c - pre; j <= c + pre; ++j) {
              if (j < 0 || j >= in.shape(1)) continue;
              const double v = in.data_at(n, j, h, w);
              sum += v * v;
            }
            sum *= alpha / size;
          } else {
            for (int y = h - pre; y <= h + pre; ++y)
              for (int x = w - pre; x <= w + pre; ++x) {
                if (y < 0 || y >= in.shape(2) || x < 0 || x >= in.shape(3)) continue;
                const double v = in.data_at(n, c, y, x);
                sum += v * v;
              }
            sum *= alpha / (size * size);
          }
          out->mutable_cpu_data()[out->offset(n, c, h, w)] =
              static_cast<Dtype>(in.data_at(n, c, h, w) * std::pow(k + sum, -beta));
        }
}

}  // namespace

template <typename Dtype>
class LRNLayerTest : public ::testing::Test {
 protected:
  LayerParameter Param(const std::string& lrn) {
    return ParseText<LayerParameter>("name: 'norm' type: 'LRN' lrn_param { " + lrn + " }");
  }
  void ExpectTop(const Blob<Dtype>& top, const std::vector<double>& expected) {
    ASSERT_EQ(top.count(), static_cast<int>(expected.size()));
    for (int i = 0; i < top.count(); ++i) {
      EXPECT_NEAR(top.cpu_data()[i], expected[i], 1e-6) << "element " << i;
    }
  }
  Rng rng_{2024};
};

TYPED_TEST_SUITE(LRNLayerTest, TestDtypes);

TYPED_TEST(LRNLayerTest, AcrossChannelsTinyInput) {
  // Channels [1, 2, 3] at one pixel, local_size 3, alpha 3 (alpha / n = 1), k 2:
  // sums of squares over the clipped windows are 1+4, 1+4+9, 4+9, so scales are 7, 16, 15.
  Blob<TypeParam> bottom({1, 3, 1, 1}), top;
  for (int i = 0; i < 3; ++i) bottom.mutable_cpu_data()[i] = i + 1;
  std::vector<Blob<TypeParam>*> b = {&bottom}, t = {&top};
  LRNLayer<TypeParam> layer(this->Param("local_size: 3 alpha: 3 beta: 0.75 k: 2"));
  layer.SetUp(b, t);
  layer.Forward(b, t);
  // 16^-0.75 = 1/8.
  this->ExpectTop(top, {std::pow(7., -0.75), 2 / 8., 3 * std::pow(15., -0.75)});
  LRNLayer<TypeParam> half(this->Param("local_size: 3 alpha: 3 beta: 0.5 k: 1"));
  half.SetUp(b, t);
  half.Forward(b, t);
  this->ExpectTop(top, {1 / std::sqrt(6.), 2 / std::sqrt(15.), 3 / std::sqrt(14.)});
  LRNLayer<TypeParam> one(this->Param("local_size: 3 alpha: 3 beta: 1 k: 1"));
  one.SetUp(b, t);
  one.Forward(b, t);
  this->ExpectTop(top, {1 / 6., 2 / 15., 3 / 14.});
  LRNLayer<TypeParam> general(this->Param("local_size: 1 alpha: 1 beta: 2 k: 0"));
  general.SetUp(b, t);
  general.Forward(b, t);
  // local_size 1: x * (x^2)^-2 = x^-3.
  this->ExpectTop(top, {1, 1 / 8., 1 / 27.});
}

TYPED_TEST(LRNLayerTest, WithinChannelTinyInput) {
  // A 3x3 plane 1..9, local_size 3, alpha 9 (alpha / n^2 = 1), beta 1, k 1: the scale is
  // 1 + the sum of squares over the zero-padded 3x3 neighbourhood.
  //   squares 1 4 9 / 16 25 36 / 49 64 81
  //   sums    46 91 74 / 159 285 219 / 154 271 206
  Blob<TypeParam> bottom({1, 1, 3, 3}), top;
  for (int i = 0; i < 9; ++i) bottom.mutable_cpu_data()[i] = i + 1;
  std::vector<Blob<TypeParam>*> b = {&bottom}, t = {&top};
  LRNLayer<TypeParam> layer(
      this->Param("local_size: 3 alpha: 9 beta: 1 k: 1 norm_region: WITHIN_CHANNEL"));
  layer.SetUp(b, t);
  layer.Forward(b, t);
  this->ExpectTop(
      top, {1 / 47., 2 / 92., 3 / 75., 4 / 160., 5 / 286., 6 / 220., 7 / 155., 8 / 272., 9 / 207.});
}

TYPED_TEST(LRNLayerTest, MatchesDefinition) {
  // beta 0.75, 0.5 and 1 take dedicated (vectorised) paths, others pow().
  for (const double beta : {0.6, 0.75, 0.5, 1.0}) {
    for (const bool across : {true, false}) {
      for (const int size : {1, 3, 5, 7}) {
        Blob<TypeParam> bottom({2, 6, 5, 4}), top, expected({2, 6, 5, 4});
        FillGaussian(&bottom, this->rng_);
        std::vector<Blob<TypeParam>*> b = {&bottom}, t = {&top};
        LRNLayer<TypeParam> layer(this->Param(
            "local_size: " + std::to_string(size) + " alpha: 0.7 beta: " + std::to_string(beta) +
            " k: 1.5 norm_region: " + (across ? "ACROSS_CHANNELS" : "WITHIN_CHANNEL")));
        layer.SetUp(b, t);
        layer.Forward(b, t);
        NaiveLRN(bottom, size, 0.7, beta, 1.5, across, &expected);
        for (int i = 0; i < top.count(); ++i) {
          ASSERT_NEAR(expected.cpu_data()[i], top.cpu_data()[i], 1e-5)
              << (across ? "across" : "within") << " size " << size << " beta " << beta
              << " element " << i;
        }
      }
    }
  }
}

TYPED_TEST(LRNLayerTest, ThreadedMatchesSerial) {
  // Images are split over the threads, each with its own work space: bit-identical results.
  for (const std::string region : {"ACROSS_CHANNELS", "WITHIN_CHANNEL"}) {
    SCOPED_TRACE(region);
    Blob<TypeParam> bottom({5, 6, 4, 3}), top_diff({5, 6, 4, 3});
    FillGaussian(&bottom, this->rng_);
    FillGaussian(&top_diff, this->rng_);
    std::vector<TypeParam> results[2][2];
    for (int run = 0; run < 2; ++run) {
      ThreadPool pool(run == 0 ? 1 : 3);
      ThreadPool::Scope use(&pool);
      Blob<TypeParam> in, top;
      in.CopyFrom(bottom, false, true);
      std::vector<Blob<TypeParam>*> b = {&in}, t = {&top};
      LRNLayer<TypeParam> layer(
          this->Param("local_size: 3 alpha: 0.5 beta: 0.75 k: 1 norm_region: " + region));
      layer.SetUp(b, t);
      layer.Forward(b, t);
      cpu_copy(top.count(), top_diff.cpu_data(), top.mutable_cpu_diff());
      layer.Backward(t, {true}, b);
      results[run][0].assign(top.cpu_data(), top.cpu_data() + top.count());
      results[run][1].assign(in.cpu_diff(), in.cpu_diff() + in.count());
    }
    EXPECT_EQ(results[0][0], results[1][0]);
    EXPECT_EQ(results[0][1], results[1][1]);
  }
}

TYPED_TEST(LRNLayerTest, GradientAcrossChannels) {
  Blob<TypeParam> bottom({2, 7, 3, 2}), top;
  FillGaussian(&bottom, this->rng_);
  std::vector<Blob<TypeParam>*> b = {&bottom}, t = {&top};
  LRNLayer<TypeParam> layer(this->Param("local_size: 5 alpha: 1 beta: 0.75"));
  GradientChecker<TypeParam> checker(1e-2, 1e-2);
  checker.CheckGradientExhaustive(&layer, b, t);
}

TYPED_TEST(LRNLayerTest, GradientAcrossChannelsWideWindowGeneralBeta) {
  // The window (7) is wider than the channels (3).
  Blob<TypeParam> bottom({1, 3, 2, 3}), top;
  FillGaussian(&bottom, this->rng_);
  std::vector<Blob<TypeParam>*> b = {&bottom}, t = {&top};
  LRNLayer<TypeParam> layer(this->Param("local_size: 7 alpha: 2 beta: 0.6 k: 1.5"));
  GradientChecker<TypeParam> checker(1e-2, 1e-2);
  checker.CheckGradientExhaustive(&layer, b, t);
}

TYPED_TEST(LRNLayerTest, GradientWithinChannel) {
  Blob<TypeParam> bottom({2, 2, 4, 3}), top;
  FillGaussian(&bottom, this->rng_);
  std::vector<Blob<TypeParam>*> b = {&bottom}, t = {&top};
  LRNLayer<TypeParam> layer(
      this->Param("local_size: 3 alpha: 1 beta: 0.75 norm_region: WITHIN_CHANNEL"));
  GradientChecker<TypeParam> checker(1e-2, 1e-2);
  checker.CheckGradientExhaustive(&layer, b, t);
}

TYPED_TEST(LRNLayerTest, GradientWithinChannelWideWindow) {
  Blob<TypeParam> bottom({1, 2, 3, 4}), top;
  FillGaussian(&bottom, this->rng_);
  std::vector<Blob<TypeParam>*> b = {&bottom}, t = {&top};
  LRNLayer<TypeParam> layer(
      this->Param("local_size: 5 alpha: 3 beta: 1.3 k: 2 norm_region: WITHIN_CHANNEL"));
  GradientChecker<TypeParam> checker(1e-2, 1e-2);
  checker.CheckGradientExhaustive(&layer, b, t);
}

TYPED_TEST(LRNLayerTest, EmptyBatchIsFine) {
  Blob<TypeParam> bottom({0, 3, 2, 2}), top;
  std::vector<Blob<TypeParam>*> b = {&bottom}, t = {&top};
  LRNLayer<TypeParam> layer(this->Param("local_size: 3"));
  layer.SetUp(b, t);
  layer.Forward(b, t);
  EXPECT_EQ(top.shape(), bottom.shape());
  layer.Backward(t, {true}, b);
}

TYPED_TEST(LRNLayerTest, RejectsBadInput) {
  using ::testing::AllOf;
  using ::testing::HasSubstr;
  const auto named = HasSubstr("layer 'norm' (LRN)");
  Blob<TypeParam> bottom({1, 3, 2, 2}), top, flat({3, 4});
  std::vector<Blob<TypeParam>*> b = {&bottom}, t = {&top};
  try {
    LRNLayer<TypeParam> layer(this->Param("local_size: 4"));
    layer.SetUp(b, t);
    ADD_FAILURE() << "even local_size accepted";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), AllOf(named, HasSubstr("local_size")));
  }
  try {
    std::vector<Blob<TypeParam>*> fb = {&flat};
    LRNLayer<TypeParam> layer(this->Param("local_size: 3"));
    layer.SetUp(fb, t);
    ADD_FAILURE() << "2-d input accepted";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), AllOf(named, HasSubstr("4 axes")));
  }
  try {
    LRNLayer<TypeParam> layer(this->Param("local_size: 3"));
    layer.SetUp(b, b);
    ADD_FAILURE() << "in-place accepted";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), AllOf(named, HasSubstr("in place")));
  }
}

}  // namespace doppio
