#pragma once

// One rule for NaN and infinity on every engine, PyTorch's and cuDNN's: they propagate. ReLU
// passes a NaN on (and makes -inf 0, or -inf times a slope), MAX pooling outputs a window's
// NaN, its maximum or, for a window of -inf, -inf, routing the gradient there, AVE pooling
// sums what its window holds, and a loss of a NaN input is NaN. The rule is written out here
// as reference code; nonfinite_test.cpp runs it on the CPU engines and nonfinite_gpu_test.cpp
// on the GPU's.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "doppio/core/layer_registry.hpp"
#include "test_util.hpp"

namespace doppio {
namespace nonfinite {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

// Makes the layer of a parameter for the engine and device under test.
using LayerMaker = std::function<std::shared_ptr<Layer<float>>(const LayerParameter&)>;

// `text` is the layer's parameters; "%ENGINE%" becomes `engine`.
inline LayerParameter Param(std::string text, const std::string& engine) {
  const std::string mark = "%ENGINE%";
  const auto at = text.find(mark);
  if (at != std::string::npos) text.replace(at, mark.size(), engine);
  return ParseText<LayerParameter>("name: 'l' " + text);
}

// Equal, a NaN matching a NaN; finite values within `tolerance` (relative).
inline void ExpectSameValues(const std::vector<float>& want, const float* got,
                             const std::string& what, double tolerance = 0) {
  for (std::size_t i = 0; i < want.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << what << " " << i << ": " << got[i] << ", want NaN";
    } else if (!std::isfinite(want[i]) || tolerance == 0) {
      EXPECT_EQ(got[i], want[i]) << what << " " << i;
    } else {
      EXPECT_NEAR(got[i], want[i], tolerance * std::max(1.f, std::fabs(want[i])))
          << what << " " << i;
    }
  }
}

// Distinct finite values, then the non-finite ones at their indices.
inline void Fill(Blob<float>* blob, const std::vector<std::pair<int, float>>& special) {
  float* x = blob->mutable_cpu_data();
  for (int i = 0; i < blob->count(); ++i) x[i] = static_cast<float>((i * 37) % 101 - 50) / 8;
  for (const auto& [index, value] : special) x[index] = value;
}

inline float ReLURule(float x, float slope) {
  if (std::isnan(x) || x > 0) return x;
  return slope == 0 ? 0.f : slope * x;
}

inline void CheckReLU(const LayerMaker& make, const std::string& engine) {
  for (const float slope : {0.f, 0.5f}) {
    SCOPED_TRACE("negative_slope " + std::to_string(slope));
    Blob<float> bottom({2, 16, 4, 4}), top;
    Fill(&bottom, {{5, kNaN}, {300, kNaN}, {17, -kInf}, {401, -kInf}, {33, kInf}, {34, -0.f}});
    auto layer = make(Param("type: 'ReLU' relu_param { negative_slope: " + std::to_string(slope) +
                                " engine: %ENGINE% }",
                            engine));
    layer->SetUp({&bottom}, {&top});
    layer->Forward({&bottom}, {&top});
    std::vector<float> want(bottom.count()), want_diff(bottom.count());
    for (int i = 0; i < bottom.count(); ++i) {
      const float x = bottom.cpu_data()[i];
      want[i] = ReLURule(x, slope);
      // The gradient of a NaN input is the negative side's, as in PyTorch.
      want_diff[i] = x > 0 ? 1.f : slope;
    }
    ExpectSameValues(want, top.cpu_data(), "top");
    std::fill_n(top.mutable_cpu_diff(), top.count(), 1.f);
    layer->Backward({&top}, {true}, {&bottom});
    ExpectSameValues(want_diff, bottom.cpu_diff(), "bottom diff");
  }
}

struct Window {
  int hstart, hend, wstart, wend, pool_size;
};

// Caffe's windows: clipped to the image; AVE divides by the part inside image and padding.
inline Window WindowOf(int ph, int pw, int height, int width, int kernel, int stride, int pad) {
  const int h0 = ph * stride - pad, w0 = pw * stride - pad;
  const int h1 = std::min(h0 + kernel, height + pad), w1 = std::min(w0 + kernel, width + pad);
  return {std::max(h0, 0), std::min(h1, height), std::max(w0, 0), std::min(w1, width),
          (h1 - h0) * (w1 - w0)};
}

// MAX and AVE pooling over a plane of -inf, a NaN, and +inf beside -inf, under four window
// shapes (stride 1 and 2 reach the CPU's vector kernel), forward and backward.
inline void CheckPooling(const LayerMaker& make, const std::string& engine, const char* method) {
  const bool max = std::string(method) == "MAX";
  const int channels = 2, height = 8, width = 8, plane = height * width;
  for (const auto& [kernel, stride, pad] :
       std::vector<std::tuple<int, int, int>>{{2, 2, 0}, {3, 2, 1}, {3, 1, 1}, {2, 1, 0}}) {
    SCOPED_TRACE(std::string(method) + " kernel " + std::to_string(kernel) + " stride " +
                 std::to_string(stride) + " pad " + std::to_string(pad));
    Blob<float> bottom({1, channels, height, width}), top;
    std::vector<std::pair<int, float>> special;
    // Plane 0: a 3x3 corner of -inf, so that some windows hold nothing else.
    for (int h = 0; h < 3; ++h) {
      for (int w = 0; w < 3; ++w) special.push_back({h * width + w, -kInf});
    }
    // Plane 1: a NaN, and +inf beside -inf.
    special.push_back({plane + 3 * width + 5, kNaN});
    special.push_back({plane + 6 * width + 1, kInf});
    special.push_back({plane + 6 * width + 0, -kInf});
    Fill(&bottom, special);
    auto layer = make(Param(std::string("type: 'Pooling' pooling_param { pool: ") + method +
                                " kernel_size: " + std::to_string(kernel) +
                                " stride: " + std::to_string(stride) +
                                " pad: " + std::to_string(pad) + " engine: %ENGINE% }",
                            engine));
    layer->SetUp({&bottom}, {&top});
    layer->Forward({&bottom}, {&top});
    const int pooled_h = top.shape(2), pooled_w = top.shape(3);
    std::vector<float> want(top.count()), want_diff(bottom.count(), 0.f);
    float* top_diff = top.mutable_cpu_diff();
    for (int c = 0; c < channels; ++c) {
      const float* x = bottom.cpu_data() + c * plane;
      for (int ph = 0; ph < pooled_h; ++ph) {
        for (int pw = 0; pw < pooled_w; ++pw) {
          const Window win = WindowOf(ph, pw, height, width, kernel, stride, pad);
          const int o = (c * pooled_h + ph) * pooled_w + pw;
          top_diff[o] = static_cast<float>(o % 5 + 1);
          double sum = 0;
          float best = 0;
          int best_index = -1;
          for (int h = win.hstart; h < win.hend; ++h) {
            for (int w = win.wstart; w < win.wend; ++w) {
              const float v = x[h * width + w];
              sum += v;
              // The first value, then a greater one or a NaN (PyTorch's order).
              if (best_index < 0 || v > best || std::isnan(v)) {
                best = v;
                best_index = h * width + w;
              }
            }
          }
          if (max) {
            want[o] = best_index < 0 ? 0.f : best;
            if (best_index >= 0) want_diff[c * plane + best_index] += top_diff[o];
          } else {
            want[o] = static_cast<float>(sum / win.pool_size);
            for (int h = win.hstart; h < win.hend; ++h) {
              for (int w = win.wstart; w < win.wend; ++w) {
                want_diff[c * plane + h * width + w] += top_diff[o] / win.pool_size;
              }
            }
          }
        }
      }
    }
    int nonfinite = 0;
    for (const float v : want) nonfinite += !std::isfinite(v);
    EXPECT_GE(nonfinite, 2);
    ExpectSameValues(want, top.cpu_data(), "top", max ? 0 : 1e-5);
    layer->Backward({&top}, {true}, {&bottom});
    ExpectSameValues(want_diff, bottom.cpu_diff(), "bottom diff", 1e-5);
  }
}

// A loss layer's value for `bottoms` (filled by the caller), NaN at bottom 0's index 0 (sample 0 at
// its label, 0) or not.
inline float LossOf(const LayerMaker& make, const LayerParameter& param,
                    const std::vector<Blob<float>*>& bottoms, bool with_nan) {
  Blob<float> input;
  input.CopyFrom(*bottoms[0], false, true);
  if (with_nan) input.mutable_cpu_data()[0] = kNaN;
  std::vector<Blob<float>*> b = bottoms;
  b[0] = &input;
  Blob<float> top;
  auto layer = make(param);
  layer->SetUp(b, {&top});
  layer->Forward(b, {&top});
  return top.cpu_data()[0];
}

// Every loss gives NaN for a NaN input, and a finite value without it.
inline void CheckLosses(const LayerMaker& make, const std::vector<std::string>& softmax_engines) {
  const int num = 4, classes = 5;
  Blob<float> scores({num, classes}), probs({num, classes}), labels({num}), targets({num, classes});
  Blob<float> other({num, classes}), similar({num}), infogain({1, 1, classes, classes});
  Fill(&scores, {});
  Fill(&other, {});
  std::fill_n(probs.mutable_cpu_data(), probs.count(), 0.2f);
  for (int n = 0; n < num; ++n) {
    labels.mutable_cpu_data()[n] = static_cast<float>(n % classes);
    similar.mutable_cpu_data()[n] = static_cast<float>(n % 2);
  }
  for (int i = 0; i < targets.count(); ++i) targets.mutable_cpu_data()[i] = (i % 3) / 2.f;
  for (int i = 0; i < infogain.count(); ++i) {
    infogain.mutable_cpu_data()[i] = i % (classes + 1) == 0 ? 1.f : 0.25f;
  }
  struct Case {
    std::string text;
    std::vector<Blob<float>*> bottoms;
    std::vector<std::string> engines;
  };
  const std::vector<Case> cases = {
      {"type: 'SoftmaxWithLoss' softmax_param { engine: %ENGINE% }",
       {&scores, &labels},
       softmax_engines},
      {"type: 'EuclideanLoss'", {&scores, &other}, {""}},
      {"type: 'SigmoidCrossEntropyLoss'", {&scores, &targets}, {""}},
      {"type: 'HingeLoss'", {&scores, &labels}, {""}},
      {"type: 'HingeLoss' hinge_loss_param { norm: L2 }", {&scores, &labels}, {""}},
      {"type: 'MultinomialLogisticLoss'", {&probs, &labels}, {""}},
      {"type: 'InfogainLoss'", {&scores, &labels, &infogain}, {""}},
      {"type: 'ContrastiveLoss'", {&scores, &other, &similar}, {""}},
  };
  for (const Case& c : cases) {
    for (const std::string& engine : c.engines) {
      SCOPED_TRACE(c.text + " " + engine);
      const LayerParameter param = Param(c.text, engine);
      EXPECT_TRUE(std::isfinite(LossOf(make, param, c.bottoms, false)));
      EXPECT_TRUE(std::isnan(LossOf(make, param, c.bottoms, true)));
    }
  }
}

}  // namespace nonfinite
}  // namespace doppio
