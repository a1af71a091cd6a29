#include "doppio/layers/pooling_layer.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "doppio/util/thread_pool.hpp"
#include "gradient_checker.hpp"
#include "test_util.hpp"

namespace doppio {

template <typename Dtype>
class PoolingLayerTest : public ::testing::Test {
 protected:
  LayerParameter Param(const std::string& pooling, const std::string& extra = "") {
    return ParseText<LayerParameter>("name: 'pool' type: 'Pooling' pooling_param { " + pooling +
                                     " } " + extra);
  }
  // Distinct values spaced well beyond the gradient checker's step, so no perturbation
  // changes which element is the maximum.
  void FillDistinct(Blob<Dtype>* blob) {
    std::vector<int> order(blob->count());
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), rng_.engine());
    for (int i = 0; i < blob->count(); ++i) {
      blob->mutable_cpu_data()[i] = Dtype(0.1) * order[i] - Dtype(0.05) * blob->count();
    }
  }
  void Fill(Blob<Dtype>* blob, const std::vector<Dtype>& values) {
    ASSERT_EQ(blob->count(), static_cast<int>(values.size()));
    std::copy(values.begin(), values.end(), blob->mutable_cpu_data());
  }
  void ExpectTop(const Blob<Dtype>& top, const std::vector<Dtype>& expected) {
    ASSERT_EQ(top.count(), static_cast<int>(expected.size()));
    for (int i = 0; i < top.count(); ++i) {
      EXPECT_NEAR(top.cpu_data()[i], expected[i], 1e-5) << "element " << i;
    }
  }

  Rng rng_{4321};
};

TYPED_TEST_SUITE(PoolingLayerTest, TestDtypes);

TYPED_TEST(PoolingLayerTest, MaxCeilOddSize) {
  // 5x5, kernel 2, stride 2: CEIL gives 3x3, the last row and column of windows is clipped.
  Blob<TypeParam> bottom({1, 1, 5, 5}), top, mask;
  this->Fill(&bottom, {3, 1, 4, 1, 5,  //
                       9, 2, 6, 5, 3,  //
                       5, 8, 9, 7, 9,  //
                       3, 2, 3, 8, 4,  //
                       6, 2, 6, 4, 3});
  std::vector<Blob<TypeParam>*> b = {&bottom}, t = {&top, &mask};
  PoolingLayer<TypeParam> layer(this->Param("pool: MAX kernel_size: 2 stride: 2"));
  layer.SetUp(b, t);
  layer.Forward(b, t);
  ASSERT_EQ(top.shape(), std::vector<int>({1, 1, 3, 3}));
  this->ExpectTop(top, {9, 6, 5, 8, 9, 9, 6, 6, 3});
  this->ExpectTop(mask, {5, 7, 4, 11, 12, 14, 20, 22, 24});

  // Backward routes each gradient to its argmax (same result with or without the mask top).
  for (int i = 0; i < 9; ++i) top.mutable_cpu_diff()[i] = i + 1;
  layer.Backward(t, {true}, b);
  std::vector<TypeParam> expected(25, 0);
  const int argmax[9] = {5, 7, 4, 11, 12, 14, 20, 22, 24};
  for (int i = 0; i < 9; ++i) expected[argmax[i]] += i + 1;
  for (int i = 0; i < 25; ++i) EXPECT_EQ(bottom.cpu_diff()[i], expected[i]) << i;

  std::vector<Blob<TypeParam>*> t1 = {&top};
  PoolingLayer<TypeParam> no_mask(this->Param("pool: MAX kernel_size: 2 stride: 2"));
  no_mask.SetUp(b, t1);
  no_mask.Forward(b, t1);
  for (int i = 0; i < 9; ++i) top.mutable_cpu_diff()[i] = i + 1;
  no_mask.Backward(t1, {true}, b);
  for (int i = 0; i < 25; ++i) EXPECT_EQ(bottom.cpu_diff()[i], expected[i]) << i;

  // FLOOR drops the partial windows: 2x2.
  PoolingLayer<TypeParam> floor(
      this->Param("pool: MAX kernel_size: 2 stride: 2 round_mode: FLOOR"));
  floor.SetUp(b, t1);
  floor.Forward(b, t1);
  ASSERT_EQ(top.shape(), std::vector<int>({1, 1, 2, 2}));
  this->ExpectTop(top, {9, 6, 8, 9});
}

// PyTorch's rule, written out: a tap wins when it is greater than the best so far or NaN, so a
// window holding NaN outputs NaN and its argmax is the window's last NaN in row-major order.
TYPED_TEST(PoolingLayerTest, MaxPropagatesNaNAndRoutesItsGradientThere) {
  const TypeParam nan = std::numeric_limits<TypeParam>::quiet_NaN();
  const int height = 6, width = 11;
  for (const char* shape : {"kernel_size: 2 stride: 1", "kernel_size: 3 stride: 2",
                            "kernel_size: 3 stride: 2 pad: 1", "kernel_size: 2 stride: 3"}) {
    SCOPED_TRACE(shape);
    Blob<TypeParam> bottom({1, 1, height, width}), top, mask;
    this->FillDistinct(&bottom);
    TypeParam* in = bottom.mutable_cpu_data();
    // Two NaNs side by side (one window holds both), one alone, one in the last column.
    for (int index : {1 * width + 1, 1 * width + 2, 4 * width + 6, 3 * width + 10}) in[index] = nan;
    std::vector<Blob<TypeParam>*> b = {&bottom}, t = {&top, &mask};
    PoolingLayer<TypeParam> layer(this->Param(std::string("pool: MAX ") + shape));
    layer.SetUp(b, t);
    layer.Forward(b, t);

    const PoolingParameter& p = layer.layer_param().pooling_param();
    const int kernel = static_cast<int>(p.kernel_size()), stride = static_cast<int>(p.stride());
    const int pad = static_cast<int>(p.pad());
    const int pooled_h = top.shape(2), pooled_w = top.shape(3);
    std::vector<TypeParam> expected_diff(bottom.count(), 0);
    int nan_windows = 0;
    for (int ph = 0; ph < pooled_h; ++ph) {
      for (int pw = 0; pw < pooled_w; ++pw) {
        TypeParam best = -std::numeric_limits<TypeParam>::infinity();
        int best_index = -1;
        for (int h = std::max(ph * stride - pad, 0);
             h < std::min(ph * stride - pad + kernel, height); ++h) {
          for (int w = std::max(pw * stride - pad, 0);
               w < std::min(pw * stride - pad + kernel, width); ++w) {
            if (in[h * width + w] > best || std::isnan(in[h * width + w])) {
              best = in[h * width + w];
              best_index = h * width + w;
            }
          }
        }
        const int o = ph * pooled_w + pw;
        EXPECT_EQ(static_cast<int>(mask.cpu_data()[o]), best_index) << "output " << o;
        top.mutable_cpu_diff()[o] = TypeParam(o + 1);
        if (best_index < 0) {
          // Wholly outside the image (CEIL with stride > kernel): 0, and no gradient.
          EXPECT_EQ(top.cpu_data()[o], TypeParam(0)) << "output " << o;
          continue;
        }
        if (std::isnan(best)) {
          ++nan_windows;
          EXPECT_TRUE(std::isnan(top.cpu_data()[o])) << "output " << o;
        } else {
          EXPECT_EQ(top.cpu_data()[o], best) << "output " << o;
        }
        expected_diff[best_index] += TypeParam(o + 1);
      }
    }
    EXPECT_GE(nan_windows, 3);
    layer.Backward(t, {true}, b);
    for (int i = 0; i < bottom.count(); ++i) EXPECT_EQ(bottom.cpu_diff()[i], expected_diff[i]) << i;
  }
}

TYPED_TEST(PoolingLayerTest, AveCeilClipsWithoutPadding) {
  // 6x6 with x[h][w] = 6h + w, kernel 3, stride 2: CEIL gives 3x3 (FLOOR 2x2). The mean of a
  // window is 6 * mean(h) + mean(w); the last windows cover only rows/columns 4 and 5.
  Blob<TypeParam> bottom({1, 1, 6, 6}), top;
  for (int i = 0; i < 36; ++i) bottom.mutable_cpu_data()[i] = i;
  std::vector<Blob<TypeParam>*> b = {&bottom}, t = {&top};
  PoolingLayer<TypeParam> layer(this->Param("pool: AVE kernel_size: 3 stride: 2"));
  layer.SetUp(b, t);
  layer.Forward(b, t);
  ASSERT_EQ(top.shape(), std::vector<int>({1, 1, 3, 3}));
  const TypeParam mean[3] = {1, 3, 4.5};
  std::vector<TypeParam> expected;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) expected.push_back(6 * mean[i] + mean[j]);
  this->ExpectTop(top, expected);

  PoolingLayer<TypeParam> floor(
      this->Param("pool: AVE kernel_size: 3 stride: 2 round_mode: FLOOR"));
  floor.SetUp(b, t);
  EXPECT_EQ(top.shape(), std::vector<int>({1, 1, 2, 2}));
}

TYPED_TEST(PoolingLayerTest, AvePaddingDivisors) {
  // All-ones 3x3, kernel 3, stride 1, pad 1: the divisor is always 9 (padding counts), so a
  // corner sees 4 ones, an edge 6 and the centre 9.
  Blob<TypeParam> bottom({1, 2, 3, 3}), top;
  cpu_set(bottom.count(), TypeParam(1), bottom.mutable_cpu_data());
  std::vector<Blob<TypeParam>*> b = {&bottom}, t = {&top};
  PoolingLayer<TypeParam> layer(this->Param("pool: AVE kernel_size: 3 stride: 1 pad: 1"));
  layer.SetUp(b, t);
  layer.Forward(b, t);
  ASSERT_EQ(top.shape(), std::vector<int>({1, 2, 3, 3}));
  std::vector<TypeParam> plane = {4 / 9., 6 / 9., 4 / 9., 6 / 9., 1,
                                  6 / 9., 4 / 9., 6 / 9., 4 / 9.};
  std::vector<TypeParam> both = plane;
  both.insert(both.end(), plane.begin(), plane.end());
  this->ExpectTop(top, both);

  // 4x4, kernel 3, stride 2, pad 1 -> 3x3. Windows start at -1, 1, 3; the last one is cut at
  // the padded border (4 + 1), so its divisor is 2 (one image row plus one padding row):
  // covered image rows [2, 3, 1] over divisors [3, 3, 2].
  Blob<TypeParam> b4({1, 1, 4, 4});
  cpu_set(b4.count(), TypeParam(1), b4.mutable_cpu_data());
  std::vector<Blob<TypeParam>*> bb = {&b4};
  PoolingLayer<TypeParam> clipped(this->Param("pool: AVE kernel_size: 3 stride: 2 pad: 1"));
  clipped.SetUp(bb, t);
  clipped.Forward(bb, t);
  ASSERT_EQ(top.shape(), std::vector<int>({1, 1, 3, 3}));
  const TypeParam r[3] = {2 / 3., 1, 1 / 2.};
  std::vector<TypeParam> expected;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) expected.push_back(r[i] * r[j]);
  this->ExpectTop(top, expected);
}

TYPED_TEST(PoolingLayerTest, CeilRuleWithPadding) {
  // 4x4, kernel 3, stride 3, pad 1: CEIL alone gives 3 windows starting at -1, 2, 5, but 5
  // lies beyond the image (4) plus padding, so Caffe's rule drops it: 2x2.
  Blob<TypeParam> bottom({1, 1, 4, 4}), top;
  for (int i = 0; i < 16; ++i) bottom.mutable_cpu_data()[i] = i;
  std::vector<Blob<TypeParam>*> b = {&bottom}, t = {&top};
  PoolingLayer<TypeParam> layer(this->Param("pool: MAX kernel_size: 3 stride: 3 pad: 1"));
  layer.SetUp(b, t);
  layer.Forward(b, t);
  ASSERT_EQ(top.shape(), std::vector<int>({1, 1, 2, 2}));
  // Windows: rows [0, 2) and [2, 4), same for columns.
  this->ExpectTop(top, {5, 7, 13, 15});
  // Only the padded axis matters per axis, but the rule runs on both when either is padded.
  PoolingLayer<TypeParam> hw(
      this->Param("pool: MAX kernel_h: 3 kernel_w: 2 stride_h: 3 stride_w: 2 pad_h: 1 pad_w: 0"));
  hw.SetUp(b, t);
  EXPECT_EQ(top.shape(), std::vector<int>({1, 1, 2, 2}));
}

TYPED_TEST(PoolingLayerTest, GlobalPooling) {
  Blob<TypeParam> bottom({2, 2, 2, 3}), top;
  for (int i = 0; i < bottom.count(); ++i) bottom.mutable_cpu_data()[i] = (i * 7) % 12;
  std::vector<Blob<TypeParam>*> b = {&bottom}, t = {&top};
  PoolingLayer<TypeParam> max(this->Param("pool: MAX global_pooling: true"));
  max.SetUp(b, t);
  max.Forward(b, t);
  ASSERT_EQ(top.shape(), std::vector<int>({2, 2, 1, 1}));
  // Planes: {0,7,2,9,4,11}, {6,1,8,3,10,5}, {0,7,2,9,4,11}, {6,1,8,3,10,5}.
  this->ExpectTop(top, {11, 10, 11, 10});
  PoolingLayer<TypeParam> ave(this->Param("pool: AVE global_pooling: true"));
  ave.SetUp(b, t);
  ave.Forward(b, t);
  this->ExpectTop(top, {33 / 6., 33 / 6., 33 / 6., 33 / 6.});
}

TYPED_TEST(PoolingLayerTest, StochasticTestIsWeightedAverage) {
  // A 1x2 window [1, 3]: (1 * 1 + 3 * 3) / (1 + 3) = 2.5. Window [0, 0]: 0.
  Blob<TypeParam> bottom({1, 1, 1, 4}), top;
  this->Fill(&bottom, {1, 3, 0, 0});
  std::vector<Blob<TypeParam>*> b = {&bottom}, t = {&top};
  PoolingLayer<TypeParam> layer(
      this->Param("pool: STOCHASTIC kernel_h: 1 kernel_w: 2 stride: 2", "phase: TEST"));
  layer.SetUp(b, t);
  layer.Forward(b, t);
  this->ExpectTop(top, {2.5, 0});
}

TYPED_TEST(PoolingLayerTest, StochasticTrainSamplesByActivation) {
  // One window [1, 3]: the 3 is drawn with probability 3/4.
  Blob<TypeParam> bottom({1, 1, 1, 2}), top;
  this->Fill(&bottom, {1, 3});
  std::vector<Blob<TypeParam>*> b = {&bottom}, t = {&top};
  PoolingLayer<TypeParam> layer(
      this->Param("pool: STOCHASTIC kernel_h: 1 kernel_w: 2", "phase: TRAIN"));
  layer.SetUp(b, t);
  layer.set_seed(5);
  int threes = 0;
  const int trials = 4000;
  for (int i = 0; i < trials; ++i) {
    layer.Forward(b, t);
    ASSERT_TRUE(top.cpu_data()[0] == 1 || top.cpu_data()[0] == 3);
    threes += top.cpu_data()[0] == 3;
  }
  EXPECT_NEAR(static_cast<double>(threes) / trials, 0.75, 0.03);
}

TYPED_TEST(PoolingLayerTest, StochasticTrainGradientGoesToSample) {
  Blob<TypeParam> bottom({2, 3, 5, 4}), top;
  this->FillDistinct(&bottom);
  // Stochastic pooling expects non-negative activations.
  for (int i = 0; i < bottom.count(); ++i) {
    bottom.mutable_cpu_data()[i] = std::abs(bottom.cpu_data()[i]) + TypeParam(0.01);
  }
  std::vector<Blob<TypeParam>*> b = {&bottom}, t = {&top};
  PoolingLayer<TypeParam> layer(
      this->Param("pool: STOCHASTIC kernel_size: 3 stride: 2", "phase: TRAIN"));
  layer.SetUp(b, t);
  layer.Forward(b, t);
  ASSERT_EQ(top.shape(), std::vector<int>({2, 3, 2, 2}));
  for (int i = 0; i < top.count(); ++i) top.mutable_cpu_diff()[i] = i + 1;
  layer.Backward(t, {true}, b);
  // Every output value must come from its window, and exactly that element gets its gradient.
  std::vector<TypeParam> expected(bottom.count(), 0);
  for (int n = 0; n < 2; ++n)
    for (int c = 0; c < 3; ++c)
      for (int ph = 0; ph < 2; ++ph)
        for (int pw = 0; pw < 2; ++pw) {
          const TypeParam v = top.data_at(n, c, ph, pw);
          int found = -1;
          for (int h = ph * 2; h < std::min(ph * 2 + 3, 5); ++h)
            for (int w = pw * 2; w < std::min(pw * 2 + 3, 4); ++w)
              if (bottom.data_at(n, c, h, w) == v) found = bottom.offset(n, c, h, w);
          ASSERT_GE(found, 0) << "output " << n << "," << c << "," << ph << "," << pw
                              << " is not an element of its window";
          expected[found] += top.cpu_diff()[top.offset(n, c, ph, pw)];
        }
  for (int i = 0; i < bottom.count(); ++i) EXPECT_EQ(bottom.cpu_diff()[i], expected[i]) << i;
}

namespace {

// MAX and AVE pooling one window at a time, as the definitions read (Caffe's CEIL sizes and
// AVE divisor), for checking the layer's row-wise and vector kernels.
struct PoolSpec {
  int kernel_h, kernel_w, stride_h, stride_w, pad_h, pad_w;
};

template <typename Dtype>
void ReferencePooling(const Blob<Dtype>& in, const PoolSpec& p, bool max, int pooled_h,
                      int pooled_w, const Dtype* top_diff, std::vector<Dtype>* out,
                      std::vector<int>* argmax, std::vector<Dtype>* in_diff) {
  const int planes = in.shape(0) * in.shape(1), height = in.shape(2), width = in.shape(3);
  out->assign(static_cast<size_t>(planes) * pooled_h * pooled_w, 0);
  argmax->assign(out->size(), -1);
  in_diff->assign(in.count(), 0);
  for (int i = 0; i < planes; ++i) {
    const Dtype* x = in.cpu_data() + static_cast<size_t>(i) * height * width;
    Dtype* dx = in_diff->data() + static_cast<size_t>(i) * height * width;
    for (int ph = 0; ph < pooled_h; ++ph)
      for (int pw = 0; pw < pooled_w; ++pw) {
        const size_t o = (static_cast<size_t>(i) * pooled_h + ph) * pooled_w + pw;
        const int h0 = ph * p.stride_h - p.pad_h, w0 = pw * p.stride_w - p.pad_w;
        const int h1 = std::min(h0 + p.kernel_h, height + p.pad_h);
        const int w1 = std::min(w0 + p.kernel_w, width + p.pad_w);
        const int hs = std::max(h0, 0), ws = std::max(w0, 0);
        const int he = std::min(h0 + p.kernel_h, height), we = std::min(w0 + p.kernel_w, width);
        if (max) {
          Dtype best = -std::numeric_limits<Dtype>::infinity();
          int best_index = -1;
          for (int h = hs; h < he; ++h)
            for (int w = ws; w < we; ++w)
              if (x[h * width + w] > best) {
                best = x[h * width + w];
                best_index = h * width + w;
              }
          (*out)[o] = best_index >= 0 ? best : Dtype(0);
          (*argmax)[o] = best_index;
          if (best_index >= 0) dx[best_index] += top_diff[o];
        } else {
          const int size = (h1 - h0) * (w1 - w0);
          Dtype sum = 0;
          for (int h = hs; h < std::min(h1, height); ++h)
            for (int w = ws; w < std::min(w1, width); ++w) sum += x[h * width + w];
          (*out)[o] = size > 0 ? sum / size : Dtype(0);
          if (size <= 0) continue;
          const Dtype share = top_diff[o] / size;
          for (int h = hs; h < std::min(h1, height); ++h)
            for (int w = ws; w < std::min(w1, width); ++w) dx[h * width + w] += share;
        }
      }
  }
}

}  // namespace

TYPED_TEST(PoolingLayerTest, MatchesTheReferenceSeriallyAndThreaded) {
  // Random shapes and windows, ties included (values from a small set), with and without the
  // mask top; MAX results and indices, AVE results and both gradients must be bit-identical to
  // the window-at-a-time reference, on any number of threads.
  // An integer in [low, high].
  const auto pick = [this](int low, int high) {
    return low + static_cast<int>(this->rng_.Below(static_cast<std::uint64_t>(high - low + 1)));
  };
  for (int trial = 0; trial < 60; ++trial) {
    PoolSpec p;
    p.kernel_h = 1 + pick(0, 3);
    p.kernel_w = 1 + pick(0, 3);
    p.stride_h = 1 + pick(0, 2);
    p.stride_w = 1 + pick(0, 2);
    p.pad_h = pick(0, p.kernel_h - 1);
    p.pad_w = pick(0, p.kernel_w - 1);
    const bool max = trial % 2 == 0;
    const bool mask_top = max && trial % 4 == 0;
    const std::vector<int> shape = {1 + pick(0, 2), 1 + pick(0, 4),
                                    std::max(p.kernel_h, 1 + pick(0, 12)),
                                    std::max(p.kernel_w, 1 + pick(0, 20))};
    Blob<TypeParam> bottom(shape);
    for (int i = 0; i < bottom.count(); ++i) {
      bottom.mutable_cpu_data()[i] = static_cast<TypeParam>(pick(-4, 4));
    }
    std::string text =
        std::string("pool: ") + (max ? "MAX" : "AVE") + " kernel_h: " + std::to_string(p.kernel_h) +
        " kernel_w: " + std::to_string(p.kernel_w) + " stride_h: " + std::to_string(p.stride_h) +
        " stride_w: " + std::to_string(p.stride_w) + " pad_h: " + std::to_string(p.pad_h) +
        " pad_w: " + std::to_string(p.pad_w);
    SCOPED_TRACE(text + " on " + ShapeString(shape));
    std::vector<TypeParam> out, in_diff;
    std::vector<int> argmax;
    for (int threads : {1, 3}) {
      ThreadPool pool(threads);
      ThreadPool::Scope use(&pool);
      Blob<TypeParam> top, mask;
      std::vector<Blob<TypeParam>*> b = {&bottom}, t = {&top};
      if (mask_top) t.push_back(&mask);
      PoolingLayer<TypeParam> layer(this->Param(text));
      layer.SetUp(b, t);
      layer.Forward(b, t);
      Rng diff_rng(trial);  // the same top diff on every number of threads
      FillGaussian(&top, diff_rng);
      cpu_copy(top.count(), top.cpu_data(), top.mutable_cpu_diff());
      layer.Forward(b, t);
      if (threads == 1) {
        ReferencePooling(bottom, p, max, top.shape(2), top.shape(3), top.cpu_diff(), &out, &argmax,
                         &in_diff);
      }
      layer.Backward(t, {true}, b);
      ASSERT_EQ(out.size(), static_cast<size_t>(top.count()));
      for (int i = 0; i < top.count(); ++i) {
        ASSERT_EQ(out[i], top.cpu_data()[i]) << "output " << i;
        if (mask_top) ASSERT_EQ(argmax[i], static_cast<int>(mask.cpu_data()[i])) << "mask " << i;
      }
      for (int i = 0; i < bottom.count(); ++i) {
        ASSERT_EQ(in_diff[i], bottom.cpu_diff()[i]) << "input diff " << i;
      }
    }
  }
}

TYPED_TEST(PoolingLayerTest, GradientMax) {
  Blob<TypeParam> bottom({2, 2, 5, 4}), top;
  this->FillDistinct(&bottom);
  std::vector<Blob<TypeParam>*> b = {&bottom}, t = {&top};
  PoolingLayer<TypeParam> layer(this->Param("pool: MAX kernel_h: 3 kernel_w: 2 stride: 2"));
  GradientChecker<TypeParam> checker(1e-2, 1e-3);
  checker.CheckGradientExhaustive(&layer, b, t);
}

TYPED_TEST(PoolingLayerTest, GradientMaxPaddedWithMaskTop) {
  Blob<TypeParam> bottom({1, 2, 4, 5}), top, mask;
  this->FillDistinct(&bottom);
  std::vector<Blob<TypeParam>*> b = {&bottom}, t = {&top, &mask};
  PoolingLayer<TypeParam> layer(this->Param("pool: MAX kernel_size: 3 stride: 2 pad: 1"));
  GradientChecker<TypeParam> checker(1e-2, 1e-3);
  checker.CheckGradientExhaustive(&layer, b, t);
}

TYPED_TEST(PoolingLayerTest, GradientAve) {
  Blob<TypeParam> bottom({2, 2, 5, 4}), top;
  FillGaussian(&bottom, this->rng_);
  std::vector<Blob<TypeParam>*> b = {&bottom}, t = {&top};
  PoolingLayer<TypeParam> layer(this->Param("pool: AVE kernel_size: 3 stride: 2"));
  GradientChecker<TypeParam> checker(1e-2, 1e-3);
  checker.CheckGradientExhaustive(&layer, b, t);
}

TYPED_TEST(PoolingLayerTest, GradientAvePadded) {
  Blob<TypeParam> bottom({1, 2, 5, 4}), top;
  FillGaussian(&bottom, this->rng_);
  std::vector<Blob<TypeParam>*> b = {&bottom}, t = {&top};
  PoolingLayer<TypeParam> layer(
      this->Param("pool: AVE kernel_h: 3 kernel_w: 2 stride_h: 2 stride_w: 1 pad_h: 2 pad_w: 1"));
  GradientChecker<TypeParam> checker(1e-2, 1e-3);
  checker.CheckGradientExhaustive(&layer, b, t);
}

TYPED_TEST(PoolingLayerTest, GradientGlobalAve) {
  Blob<TypeParam> bottom({2, 3, 3, 2}), top;
  FillGaussian(&bottom, this->rng_);
  std::vector<Blob<TypeParam>*> b = {&bottom}, t = {&top};
  PoolingLayer<TypeParam> layer(this->Param("pool: AVE global_pooling: true"));
  GradientChecker<TypeParam> checker(1e-2, 1e-3);
  checker.CheckGradientExhaustive(&layer, b, t);
}

TYPED_TEST(PoolingLayerTest, GradientStochasticTest) {
  Blob<TypeParam> bottom({1, 2, 4, 5}), top;
  FillUniform(&bottom, this->rng_, TypeParam(0.5), TypeParam(2));
  std::vector<Blob<TypeParam>*> b = {&bottom}, t = {&top};
  PoolingLayer<TypeParam> layer(
      this->Param("pool: STOCHASTIC kernel_size: 3 stride: 2", "phase: TEST"));
  GradientChecker<TypeParam> checker(1e-2, 1e-3);
  checker.CheckGradientExhaustive(&layer, b, t);
}

TYPED_TEST(PoolingLayerTest, EmptyBatchIsFine) {
  for (const std::string pool : {"MAX", "AVE"}) {
    Blob<TypeParam> bottom({0, 3, 5, 5}), top;
    std::vector<Blob<TypeParam>*> b = {&bottom}, t = {&top};
    PoolingLayer<TypeParam> layer(this->Param("pool: " + pool + " kernel_size: 2 stride: 2"));
    layer.SetUp(b, t);
    layer.Forward(b, t);
    EXPECT_EQ(top.shape(), std::vector<int>({0, 3, 3, 3}));
    layer.Backward(t, {true}, b);
  }
}

TYPED_TEST(PoolingLayerTest, RejectsBadParameters) {
  using ::testing::AllOf;
  using ::testing::HasSubstr;
  const auto err = [this](const std::string& p, const std::vector<int>& shape,
                          int tops = 1) -> std::string {
    Blob<TypeParam> bottom(shape), top, top2;
    std::vector<Blob<TypeParam>*> b = {&bottom}, t = {&top};
    if (tops == 2) t.push_back(&top2);
    PoolingLayer<TypeParam> layer(
        ParseText<LayerParameter>("name: 'bad_pool' type: 'Pooling' pooling_param { " + p + " }"));
    try {
      layer.SetUp(b, t);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  const std::vector<int> shape = {1, 2, 4, 5};
  const auto named = HasSubstr("layer 'bad_pool' (Pooling)");
  EXPECT_THAT(err("kernel_size: 5", shape), AllOf(named, HasSubstr("larger than the padded")));
  EXPECT_THAT(err("kernel_size: 6 pad: 1", {1, 1, 3, 3}),
              AllOf(named, HasSubstr("larger than the padded")));
  EXPECT_EQ(err("kernel_size: 5 pad: 1", shape), "");
  EXPECT_THAT(err("kernel_size: 3 pad: 3", shape), AllOf(named, HasSubstr("pad")));
  EXPECT_THAT(err("global_pooling: true kernel_size: 2", shape),
              AllOf(named, HasSubstr("global_pooling"), HasSubstr("kernel")));
  EXPECT_THAT(err("global_pooling: true pad: 1", shape), AllOf(named, HasSubstr("pad")));
  EXPECT_THAT(err("pool: STOCHASTIC kernel_size: 3 pad: 1", shape), AllOf(named, HasSubstr("pad")));
  EXPECT_THAT(err("stride: 2", shape), AllOf(named, HasSubstr("kernel_size")));
  EXPECT_THAT(err("kernel_size: 0", shape), AllOf(named, HasSubstr("kernel")));
  EXPECT_THAT(err("kernel_size: 2 stride: 0", shape), AllOf(named, HasSubstr("stride")));
  EXPECT_THAT(err("kernel_size: 2 kernel_h: 2 kernel_w: 2", shape),
              AllOf(named, HasSubstr("kernel_h")));
  EXPECT_THAT(err("kernel_h: 2", shape), AllOf(named, HasSubstr("kernel_w")));
  EXPECT_THAT(err("kernel_size: 2", {1, 2, 0, 5}), AllOf(named, HasSubstr("empty")));
  EXPECT_THAT(err("kernel_size: 2", {2, 4, 5}), AllOf(named, HasSubstr("4 axes")));
  EXPECT_THAT(err("pool: AVE kernel_size: 2", shape, 2), named);
  EXPECT_EQ(err("pool: MAX kernel_size: 2", shape, 2), "");
}

}  // namespace doppio
