#pragma once

#include <vector>

#include "doppio/layers/loss_layer.hpp"

namespace doppio {

// Contrastive loss over pairs (a_n, b_n) with similarity label y_n (non-zero: similar):
// 1/(2N) sum y d^2 + (1 - y) max(margin - d, 0)^2, d = ||a_n - b_n||; with
// contrastive_loss_param.legacy_version the dissimilar term is max(margin - d^2, 0).
// Bottoms: a, b (same shape, first axis N) and y (N values). a and b take gradients.
template <typename Dtype>
class ContrastiveLossLayer : public LossLayer<Dtype> {
 public:
  using typename Layer<Dtype>::BlobVec;

  explicit ContrastiveLossLayer(const LayerParameter& param) : LossLayer<Dtype>(param) {}
  void Reshape(const BlobVec& bottom, const BlobVec& top) override;

  const char* type() const override { return "ContrastiveLoss"; }
  int ExactNumBottomBlobs() const override { return 3; }
  bool AllowForceBackward(int bottom_index) const override { return bottom_index != 2; }

 protected:
  void Forward_cpu(const BlobVec& bottom, const BlobVec& top) override;
  void Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override;
#ifdef DOPPIO_WITH_CUDA
  void Forward_gpu(const BlobVec& bottom, const BlobVec& top) override;
  void Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override;
#endif

  Blob<Dtype> diff_;     // a - b
  Blob<Dtype> dist_sq_;  // ||a_n - b_n||^2 per pair
};

}  // namespace doppio
