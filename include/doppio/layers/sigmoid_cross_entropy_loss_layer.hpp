#pragma once

#include <vector>

#include "doppio/layers/loss_layer.hpp"

namespace doppio {

// Cross-entropy between sigmoid(predictions) and targets in [0, 1] of the same count,
// computed in a form that never overflows. Positions whose target equals
// loss_param.ignore_label are skipped. Normalization follows loss_param; with neither
// `normalization` nor `normalize` set it is BATCH_SIZE, as in Caffe (where this layer
// originally divided by the batch size).
template <typename Dtype>
class SigmoidCrossEntropyLossLayer : public LossLayer<Dtype> {
 public:
  using typename Layer<Dtype>::BlobVec;

  explicit SigmoidCrossEntropyLossLayer(const LayerParameter& param) : LossLayer<Dtype>(param) {}
  void LayerSetUp(const BlobVec& bottom, const BlobVec& top) override;
  void Reshape(const BlobVec& bottom, const BlobVec& top) override;

  const char* type() const override { return "SigmoidCrossEntropyLoss"; }

 protected:
  void Forward_cpu(const BlobVec& bottom, const BlobVec& top) override;
  void Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override;
#ifdef DOPPIO_WITH_CUDA
  void Forward_gpu(const BlobVec& bottom, const BlobVec& top) override;
  void Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override;
#endif

  bool IsIgnored(Dtype target) const {
    return has_ignore_label_ && static_cast<int>(target) == ignore_label_;
  }

  bool has_ignore_label_ = false;
  int ignore_label_ = 0;
  LossParameter::NormalizationMode normalization_ = LossParameter::BATCH_SIZE;
  int outer_num_ = 0;
  int inner_num_ = 0;
#ifdef DOPPIO_WITH_CUDA
  Blob<Dtype> loss_buffer_;   // per-element loss for the device reduction
  Blob<Dtype> count_buffer_;  // 1 where the target is not ignored
#endif
};

}  // namespace doppio
