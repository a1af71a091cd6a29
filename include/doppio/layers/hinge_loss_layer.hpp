#pragma once

#include <vector>

#include "doppio/layers/loss_layer.hpp"

namespace doppio {

// One-vs-all hinge loss. For sample n with label l and score x[n][k]:
// t = +1 for k == l and -1 otherwise; L1: sum max(0, 1 - t x) / N, L2: sum max(0, 1 - t x)^2 / N.
template <typename Dtype>
class HingeLossLayer : public LossLayer<Dtype> {
 public:
  using typename Layer<Dtype>::BlobVec;

  explicit HingeLossLayer(const LayerParameter& param) : LossLayer<Dtype>(param) {}
  void Reshape(const BlobVec& bottom, const BlobVec& top) override;

  const char* type() const override { return "HingeLoss"; }

 protected:
  void Forward_cpu(const BlobVec& bottom, const BlobVec& top) override;
  void Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override;
#ifdef DOPPIO_WITH_CUDA
  void Forward_gpu(const BlobVec& bottom, const BlobVec& top) override;
  void Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override;
#endif

  // The margins max(0, 1 - t x), kept for Backward.
  Blob<Dtype> margin_;
#ifdef DOPPIO_WITH_CUDA
  std::shared_ptr<SyncedMemory> bad_label_;  // the first sample with an invalid label
#endif
};

}  // namespace doppio
