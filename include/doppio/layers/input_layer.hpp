#pragma once

#include <vector>

#include "doppio/core/layer.hpp"

namespace doppio {

// Declares the net's inputs: its tops are shaped from input_param.shape (one shape for all
// tops or one per top) and filled by the caller. Without any shape the tops are left as
// they are, for a caller that shapes them itself.
template <typename Dtype>
class InputLayer : public Layer<Dtype> {
 public:
  using BlobVec = typename Layer<Dtype>::BlobVec;

  explicit InputLayer(const LayerParameter& param) : Layer<Dtype>(param) {}
  void LayerSetUp(const BlobVec& bottom, const BlobVec& top) override;
  // The shapes are fixed at set-up (or changed by the caller), never by Forward.
  void Reshape(const BlobVec& bottom, const BlobVec& top) override {}
  const char* type() const override { return "Input"; }

  int ExactNumBottomBlobs() const override { return 0; }
  int MinTopBlobs() const override { return 1; }

 protected:
  void Forward_cpu(const BlobVec& bottom, const BlobVec& top) override {}
  void Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {}
#ifdef DOPPIO_WITH_CUDA
  void Forward_gpu(const BlobVec& bottom, const BlobVec& top) override;
  void Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override;
#endif
};

}  // namespace doppio
