#pragma once

#include <vector>

#include "doppio/core/layer.hpp"

namespace doppio {

// Base of the layers that reduce predictions and targets to a scalar loss: two bottoms
// (predictions, then labels or targets) and one scalar top (shape {}).
template <typename Dtype>
class LossLayer : public Layer<Dtype> {
 public:
  using typename Layer<Dtype>::BlobVec;

  explicit LossLayer(const LayerParameter& param) : Layer<Dtype>(param) {}

  // Checks that predictions and labels agree on the first axis and shapes the scalar top.
  void Reshape(const BlobVec& bottom, const BlobVec& top) override;

  int ExactNumBottomBlobs() const override { return 2; }
  int ExactNumTopBlobs() const override { return 1; }
  bool AutoTopBlobs() const override { return true; }
  bool IsLossLayer() const override { return true; }
  // Labels never take a gradient.
  bool AllowForceBackward(int bottom_index) const override { return bottom_index != 1; }

  // The normalization a LossParameter asks for. The deprecated `normalize` bool applies only
  // when `normalization` is not set (true: VALID, false: BATCH_SIZE); with neither set the
  // result is `fallback` (VALID for most layers, as the schema's default).
  static LossParameter::NormalizationMode ResolveNormalization(
      const LossParameter& param, LossParameter::NormalizationMode fallback = LossParameter::VALID);

  // The divisor of a summed loss: FULL counts every position (outer * inner), VALID the
  // positions not ignored (valid_count; -1 means all), BATCH_SIZE the outer count, NONE 1.
  // Never below 1, so a batch whose labels are all ignored gives loss 0, not NaN.
  static Dtype GetNormalizer(LossParameter::NormalizationMode mode, int outer_num, int inner_num,
                             int valid_count);

 protected:
  // Throws Error naming the layer when a backward pass is requested for a label bottom.
  void RejectLabelGradient(const std::vector<bool>& propagate_down, int bottom_index) const;
};

}  // namespace doppio
