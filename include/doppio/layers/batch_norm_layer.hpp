#pragma once

#include <vector>

#include "doppio/core/layer.hpp"

namespace doppio {

// Normalizes each channel (axis 1) to zero mean and unit variance over the batch and the
// spatial positions. Like Caffe it has no scale or shift of its own (follow it with a Scale
// layer with bias_term) and keeps three blobs that it updates itself in Forward:
//   blobs_[0] running sum of means, blobs_[1] running sum of (unbiased) variances, both
//   shape {C}, and blobs_[2] the running normalizing factor, shape {1};
// the statistics are blobs_[0] / blobs_[2] and blobs_[1] / blobs_[2]. They are not learned:
// they take no gradient, and their ParamSpecs carry lr_mult 0 (added when missing).
// use_global_stats (default: false in TRAIN, true in TEST) normalizes with the stored
// statistics instead of the batch's.
template <typename Dtype>
class BatchNormLayer : public Layer<Dtype> {
 public:
  using typename Layer<Dtype>::BlobVec;

  explicit BatchNormLayer(const LayerParameter& param) : Layer<Dtype>(param) {}
  void LayerSetUp(const BlobVec& bottom, const BlobVec& top) override;
  void Reshape(const BlobVec& bottom, const BlobVec& top) override;

  const char* type() const override { return "BatchNorm"; }
  int ExactNumBottomBlobs() const override { return 1; }
  int ExactNumTopBlobs() const override { return 1; }
  // Whether Forward normalizes with the stored statistics (known from LayerSetUp).
  bool use_global_stats() const { return use_global_stats_; }
  // With batch statistics, x_norm_: the output as Forward wrote it.
  const Blob<Dtype>* KeptTopCopy(int top_index) const override {
    return use_global_stats_ ? nullptr : &x_norm_;
  }

 protected:
  void Forward_cpu(const BlobVec& bottom, const BlobVec& top) override;
  void Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override;
#ifdef DOPPIO_WITH_CUDA
  void Forward_gpu(const BlobVec& bottom, const BlobVec& top) override;
  void Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override;
#endif

  bool use_global_stats_ = false;
  Dtype moving_average_fraction_ = Dtype(0.999);
  Dtype eps_ = Dtype(1e-5);
  int channels_ = 0;
  int num_ = 0;
  int spatial_dim_ = 0;
  std::vector<Dtype> mean_;     // per channel, of this batch or the stored statistics
  std::vector<Dtype> inv_std_;  // 1 / sqrt(variance + eps) per channel
  std::vector<Dtype> sum_dy_;   // Backward scratch: per-channel sums of dy and dy * x_norm
  std::vector<Dtype> sum_dy_xnorm_;
  Blob<Dtype> x_norm_;  // the normalized output, kept for Backward (top may be overwritten)
#ifdef DOPPIO_WITH_CUDA
  // Per-channel device buffers of Forward_gpu / Backward_gpu: mean, 1 / sqrt(var + eps) (the
  // variance before that), and Backward's two sums.
  Blob<Dtype> mean_gpu_;
  Blob<Dtype> inv_std_gpu_;
  Blob<Dtype> sum_dy_gpu_;
  Blob<Dtype> sum_dy_xnorm_gpu_;
#endif
};

}  // namespace doppio
