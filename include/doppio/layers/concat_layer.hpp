#pragma once

#include <vector>

#include "doppio/core/layer.hpp"

namespace doppio {

// Joins its bottoms along one axis (concat_param.axis, or the legacy concat_dim). Every
// bottom must match bottom[0] on all other axes. A single bottom passes through unchanged
// (the top shares its data and diff).
template <typename Dtype>
class ConcatLayer : public Layer<Dtype> {
 public:
  using BlobVec = typename Layer<Dtype>::BlobVec;

  explicit ConcatLayer(const LayerParameter& param) : Layer<Dtype>(param) {}
  void LayerSetUp(const BlobVec& bottom, const BlobVec& top) override;
  void Reshape(const BlobVec& bottom, const BlobVec& top) override;

  const char* type() const override { return "Concat"; }
  int MinBottomBlobs() const override { return 1; }
  int ExactNumTopBlobs() const override { return 1; }

 protected:
  void Forward_cpu(const BlobVec& bottom, const BlobVec& top) override;
  void Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override;
#ifdef DOPPIO_WITH_CUDA
  void Forward_gpu(const BlobVec& bottom, const BlobVec& top) override;
  void Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override;
#endif

  int concat_axis_ = 1;
  // Product of the axes before the concat axis, and of those after it.
  int num_concats_ = 1;
  int concat_input_size_ = 1;
};

}  // namespace doppio
