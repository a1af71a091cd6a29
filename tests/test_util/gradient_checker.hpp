#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "doppio/core/layer.hpp"
#include "doppio/util/math_functions.hpp"

namespace doppio {

// Finite-difference gradient checker. The objective for a check is either one element of one
// top (top_id >= 0: d obj / d top = one-hot) or half the sum of squares of all tops
// (top_id < 0: d obj / d top = top). Every parameter blob and the selected bottoms are
// perturbed element by element by +-stepsize and the central difference is compared with
// the analytic gradient from Backward, with tolerance threshold * max(|a|, |b|, 1).
// The layer is re-seeded before every Forward, so random layers (Dropout) see one mask.
template <typename Dtype>
class GradientChecker {
 public:
  using BlobVec = std::vector<Blob<Dtype>*>;

  GradientChecker(Dtype stepsize, Dtype threshold, std::uint64_t seed = 1701, Dtype kink = 0,
                  Dtype kink_range = -1)
      : stepsize_(stepsize),
        threshold_(threshold),
        seed_(seed),
        kink_(kink),
        kink_range_(kink_range) {}

  // Checks d(top[i][j]) / d(everything) for every top element: thorough, O(top * inputs).
  // check_bottom < 0 checks all bottoms, otherwise only that one.
  void CheckGradientExhaustive(Layer<Dtype>* layer, const BlobVec& bottom, const BlobVec& top,
                               int check_bottom = -1) {
    layer->SetUp(bottom, top);
    ASSERT_GT(top.size(), 0u) << "exhaustive check needs at least one top";
    for (std::size_t i = 0; i < top.size(); ++i) {
      for (int j = 0; j < top[i]->count(); ++j) {
        CheckGradientSingle(layer, bottom, top, check_bottom, static_cast<int>(i), j, false);
      }
    }
  }

  // For element-wise layers: only d(top[j]) / d(bottom[j]); tops and bottoms must match.
  void CheckGradientEltwise(Layer<Dtype>* layer, const BlobVec& bottom, const BlobVec& top) {
    layer->SetUp(bottom, top);
    ASSERT_GT(top.size(), 0u);
    for (std::size_t i = 0; i < top.size(); ++i) {
      for (int j = 0; j < top[i]->count(); ++j) {
        CheckGradientSingle(layer, bottom, top, -1, static_cast<int>(i), j, true);
      }
    }
  }

  // One objective: top_id < 0 for the sum-of-squares objective over all tops.
  void CheckGradientSingle(Layer<Dtype>* layer, const BlobVec& bottom, const BlobVec& top,
                           int check_bottom, int top_id, int top_data_id, bool element_wise) {
    if (element_wise) {
      ASSERT_EQ(0, layer->blobs().size()) << "element-wise checks take no parameters";
      ASSERT_GE(top_id, 0);
      ASSERT_GE(top_data_id, 0);
      for (auto* b : bottom) ASSERT_EQ(top[top_id]->count(), b->count());
    }
    // Blobs to check: parameters first, then bottoms.
    std::vector<Blob<Dtype>*> blobs_to_check;
    std::vector<bool> propagate_down(bottom.size(), check_bottom < 0);
    for (auto& param : layer->blobs()) {
      cpu_set(param->count(), Dtype(0), param->mutable_cpu_diff());
      blobs_to_check.push_back(param.get());
    }
    if (check_bottom < 0) {
      for (auto* b : bottom) blobs_to_check.push_back(b);
    } else if (check_bottom < static_cast<int>(bottom.size())) {
      blobs_to_check.push_back(bottom[check_bottom]);
      propagate_down[check_bottom] = true;
    }
    ASSERT_GT(blobs_to_check.size(), 0u) << "no blobs to check";

    // Analytic gradient.
    layer->set_seed(seed_);
    layer->Forward(bottom, top);
    Objective(top, top_id, top_data_id);
    layer->Backward(top, propagate_down, bottom);
    std::vector<std::vector<Dtype>> computed(blobs_to_check.size());
    for (std::size_t b = 0; b < blobs_to_check.size(); ++b) {
      const Dtype* diff = blobs_to_check[b]->cpu_diff();
      computed[b].assign(diff, diff + blobs_to_check[b]->count());
    }

    // Numeric gradient, element by element.
    for (std::size_t b = 0; b < blobs_to_check.size(); ++b) {
      Blob<Dtype>* current = blobs_to_check[b];
      for (int f = 0; f < current->count(); ++f) {
        if (element_wise && f != top_data_id) continue;
        Dtype* data = current->mutable_cpu_data();
        const Dtype feature = data[f];
        data[f] = feature + stepsize_;
        layer->set_seed(seed_);
        layer->Forward(bottom, top);
        const Dtype positive = Objective(top, top_id, top_data_id);
        data = current->mutable_cpu_data();
        data[f] = feature - stepsize_;
        layer->set_seed(seed_);
        layer->Forward(bottom, top);
        const Dtype negative = Objective(top, top_id, top_data_id);
        current->mutable_cpu_data()[f] = feature;
        const Dtype estimated = (positive - negative) / stepsize_ / Dtype(2);
        const Dtype analytic = computed[b][f];
        if (kink_range_ >= 0 && std::fabs(feature - kink_) <= kink_range_) continue;
        const Dtype scale =
            std::max<Dtype>(std::max(std::fabs(analytic), std::fabs(estimated)), Dtype(1));
        EXPECT_NEAR(analytic, estimated, threshold_ * scale)
            << "blob " << b << " (of " << blobs_to_check.size() << ", parameters first), element "
            << f << "; objective top " << top_id << " element " << top_data_id;
        if (::testing::Test::HasFailure() && ++failures_ > 20) {
          FAIL() << "stopping after 20 gradient mismatches";
        }
      }
    }
  }

 private:
  // Returns the objective and writes d obj / d top into the tops' diffs: half the sum of
  // squares of every top (top_id < 0) or of one top (top_data_id < 0), or twice one element.
  Dtype Objective(const BlobVec& top, int top_id, int top_data_id) {
    Dtype squares = 0, element = 0;
    for (int i = 0; i < static_cast<int>(top.size()); ++i) {
      Blob<Dtype>* t = top[i];
      if (top_id >= 0 && i != top_id) {
        cpu_set(t->count(), Dtype(0), t->mutable_cpu_diff());
      } else if (top_id < 0 || top_data_id < 0) {
        const Dtype* data = t->cpu_data();
        for (int j = 0; j < t->count(); ++j) squares += data[j] * data[j];
        cpu_copy(t->count(), data, t->mutable_cpu_diff());
      } else {
        // A small weight keeps the objective's scale independent of the top's magnitude.
        const Dtype weight = 2;
        cpu_set(t->count(), Dtype(0), t->mutable_cpu_diff());
        element = t->cpu_data()[top_data_id] * weight;
        t->mutable_cpu_diff()[top_data_id] = weight;
      }
    }
    return top_id < 0 || top_data_id < 0 ? squares / Dtype(2) : element;
  }

  Dtype stepsize_;
  Dtype threshold_;
  std::uint64_t seed_;
  Dtype kink_;
  Dtype kink_range_;
  int failures_ = 0;
};

}  // namespace doppio
