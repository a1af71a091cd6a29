#pragma once

// Runs one layer configuration on two engines with the same bottoms, parameters and top
// diffs, and compares what they compute: the tops, the bottom diffs and the parameter
// gradients. Used to check the oneDNN engine against Doppio's own (CAFFE) kernels.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "doppio/core/layer_registry.hpp"
#include "doppio/util/half.hpp"
#include "test_util.hpp"

namespace doppio {

// `text` is a LayerParameter in text form whose "%ENGINE%" is replaced by the engine's name.
inline LayerParameter EngineParam(std::string text, const std::string& engine) {
  const std::string mark = "%ENGINE%";
  const auto at = text.find(mark);
  if (at != std::string::npos) text.replace(at, mark.size(), engine);
  return ParseText<LayerParameter>("name: 'l' " + text);
}

// The root mean square of `count` values.
inline double RootMeanSquare(const float* values, int count) {
  double sum_sq = 0;
  for (int i = 0; i < count; ++i) sum_sq += double(values[i]) * values[i];
  return count > 0 ? std::sqrt(sum_sq / count) : 0;
}

// Expects `got` to equal `want` element by element to `tolerance` relative to the largest of
// the element's magnitude, the root mean square of `want` (sums of many terms of either
// sign lose relative precision where they come out near zero) and `floor` (for a blob that
// is all such sums, e.g. a gradient that is zero but for rounding).
inline void ExpectClose(const float* got, const float* want, int count, double tolerance,
                        const std::string& what, double floor = 0) {
  const double rms = RootMeanSquare(want, count);
  int reported = 0;
  for (int i = 0; i < count; ++i) {
    const double scale = std::max({std::fabs(double(want[i])), rms, floor});
    if (std::fabs(double(got[i]) - want[i]) <= tolerance * scale) continue;
    ADD_FAILURE() << what << " element " << i << " of " << count << ": " << got[i] << " vs "
                  << want[i] << " (tolerance " << tolerance << " x " << scale << ")";
    if (++reported == 5) return;
  }
}

struct EngineComparison {
  std::string text;                       // the layer, with %ENGINE%
  std::vector<std::vector<int>> bottoms;  // bottom shapes
  int tops = 1;
  double tolerance = 1e-4;
  std::string reference = "CAFFE";
  std::string engine = "ONEDNN";
  // Parameters drawn from |N(0, 1)| + 0.5 rather than N(0, 1): BatchNorm's stored variances
  // and moving-average factor must be positive.
  bool positive_params = false;
  // What `engine`'s layer is asked to run in (mixed precision), and must then run in.
  Precision precision = FP32;
};

// Forward, then backward twice (parameter gradients accumulate), then a change of the weights
// and another forward: every result of `engine` against `reference`.
inline void CompareEngines(const EngineComparison& c) {
  Rng rng(1701);
  std::vector<std::unique_ptr<Blob<float>>> bottoms[2], tops[2];
  std::vector<Blob<float>*> bottom[2], top[2];
  std::shared_ptr<Layer<float>> layer[2];
  const std::string engines[2] = {c.reference, c.engine};
  for (int e = 0; e < 2; ++e) {
    for (const auto& shape : c.bottoms) {
      bottoms[e].push_back(std::make_unique<Blob<float>>(shape));
      bottom[e].push_back(bottoms[e].back().get());
    }
    for (int t = 0; t < c.tops; ++t) {
      tops[e].push_back(std::make_unique<Blob<float>>());
      top[e].push_back(tops[e].back().get());
    }
    layer[e] = LayerRegistry<float>::CreateLayer(EngineParam(c.text, engines[e]), Mode::CPU);
    ASSERT_EQ(layer[e]->engine(), engines[e]);
  }
  layer[1]->set_precision_request(c.precision);
  for (std::size_t b = 0; b < c.bottoms.size(); ++b) {
    FillGaussian(bottom[0][b], rng);
    // In bf16, values bf16 holds exactly: both engines then see the same ties (MAX pooling's
    // gradient goes to the first of equal values), and the comparison is of the arithmetic.
    if (c.precision == BF16) {
      float* values = bottom[0][b]->mutable_cpu_data();
      for (int i = 0; i < bottom[0][b]->count(); ++i) {
        values[i] = Bfloat16ToFloat(FloatToBfloat16(values[i]));
      }
    }
    bottom[1][b]->CopyFrom(*bottom[0][b]);
  }
  for (int e = 0; e < 2; ++e) layer[e]->SetUp(bottom[e], top[e]);
  ASSERT_EQ(layer[1]->precision().math, c.precision);
  ASSERT_EQ(layer[0]->blobs().size(), layer[1]->blobs().size());
  for (std::size_t p = 0; p < layer[0]->blobs().size(); ++p) {
    Blob<float>& param = *layer[0]->blobs()[p];
    FillGaussian(&param, rng);
    if (c.positive_params) {
      for (int i = 0; i < param.count(); ++i) {
        param.mutable_cpu_data()[i] = std::fabs(param.cpu_data()[i]) + 0.5f;
      }
    }
    layer[1]->blobs()[p]->CopyFrom(*layer[0]->blobs()[p]);
  }
  const auto compare_tops = [&](const std::string& when) {
    for (int t = 0; t < c.tops; ++t) {
      ASSERT_EQ(top[0][t]->shape(), top[1][t]->shape()) << when;
      ExpectClose(top[1][t]->cpu_data(), top[0][t]->cpu_data(), top[0][t]->count(), c.tolerance,
                  when + ": top " + std::to_string(t));
    }
    // What Forward stores in the parameters (BatchNorm's running statistics).
    for (std::size_t p = 0; p < layer[0]->blobs().size(); ++p) {
      ExpectClose(layer[1]->blobs()[p]->cpu_data(), layer[0]->blobs()[p]->cpu_data(),
                  layer[0]->blobs()[p]->count(), c.tolerance,
                  when + ": parameter " + std::to_string(p));
    }
  };
  for (int e = 0; e < 2; ++e) layer[e]->Forward(bottom[e], top[e]);
  compare_tops("forward");

  for (int t = 0; t < c.tops; ++t) {
    rng_gaussian<float>(top[0][t]->count(), 0.f, 1.f, rng, top[0][t]->mutable_cpu_diff());
    top[1][t]->CopyFrom(*top[0][t], true);
  }
  const std::vector<bool> down(c.bottoms.size(), true);
  for (int pass = 1; pass <= 2; ++pass) {
    for (int e = 0; e < 2; ++e) layer[e]->Backward(top[e], down, bottom[e]);
    const std::string when = "backward pass " + std::to_string(pass);
    for (std::size_t b = 0; b < c.bottoms.size(); ++b) {
      ExpectClose(bottom[1][b]->cpu_diff(), bottom[0][b]->cpu_diff(), bottom[0][b]->count(),
                  c.tolerance, when + ": bottom diff " + std::to_string(b));
    }
    for (std::size_t p = 0; p < layer[0]->blobs().size(); ++p) {
      ExpectClose(layer[1]->blobs()[p]->cpu_diff(), layer[0]->blobs()[p]->cpu_diff(),
                  layer[0]->blobs()[p]->count(), c.tolerance,
                  when + ": parameter " + std::to_string(p) + " diff");
    }
  }

  // An update of the parameters must reach the engine's cached copies.
  for (std::size_t p = 0; p < layer[0]->blobs().size(); ++p) {
    for (int e = 0; e < 2; ++e) layer[e]->blobs()[p]->Update();
  }
  for (int e = 0; e < 2; ++e) layer[e]->Forward(bottom[e], top[e]);
  compare_tops("forward after an update");
}

}  // namespace doppio
