#pragma once

#include <vector>

#include "doppio/core/layer.hpp"

namespace doppio {

// Merges the axes [axis, end_axis] of its bottom into one. The top is a view: it shares the
// bottom's data and diff, so Forward and Backward move no memory.
template <typename Dtype>
class FlattenLayer : public Layer<Dtype> {
 public:
  using BlobVec = typename Layer<Dtype>::BlobVec;

  explicit FlattenLayer(const LayerParameter& param) : Layer<Dtype>(param) {}
  void Reshape(const BlobVec& bottom, const BlobVec& top) override;

  const char* type() const override { return "Flatten"; }
  int ExactNumBottomBlobs() const override { return 1; }
  int ExactNumTopBlobs() const override { return 1; }

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
