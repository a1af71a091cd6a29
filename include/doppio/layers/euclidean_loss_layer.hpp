#pragma once

#include <vector>

#include "doppio/layers/loss_layer.hpp"

namespace doppio {

// Sum of squared differences between two bottoms of equal size, divided by 2N (N the
// first dimension). Both bottoms take a gradient, so either may be the target.
template <typename Dtype>
class EuclideanLossLayer : public LossLayer<Dtype> {
 public:
  using typename Layer<Dtype>::BlobVec;

  explicit EuclideanLossLayer(const LayerParameter& param) : LossLayer<Dtype>(param) {}
  void Reshape(const BlobVec& bottom, const BlobVec& top) override;

  const char* type() const override { return "EuclideanLoss"; }
  bool AllowForceBackward(int bottom_index) const override { return true; }

 protected:
  void Forward_cpu(const BlobVec& bottom, const BlobVec& top) override;
  void Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override;
#ifdef DOPPIO_WITH_CUDA
  void Forward_gpu(const BlobVec& bottom, const BlobVec& top) override;
  void Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override;
#endif

  Blob<Dtype> diff_;
};

}  // namespace doppio
