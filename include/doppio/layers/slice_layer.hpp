#pragma once

#include <vector>

#include "doppio/core/layer.hpp"

namespace doppio {

// Cuts its bottom along one axis (slice_param.axis, or the legacy slice_dim) into its tops,
// at the given slice_point values or, without them, into equal parts. A single top passes
// the bottom through (sharing data and diff).
template <typename Dtype>
class SliceLayer : public Layer<Dtype> {
 public:
  using BlobVec = typename Layer<Dtype>::BlobVec;

  explicit SliceLayer(const LayerParameter& param) : Layer<Dtype>(param) {}
  void LayerSetUp(const BlobVec& bottom, const BlobVec& top) override;
  void Reshape(const BlobVec& bottom, const BlobVec& top) override;

  const char* type() const override { return "Slice"; }
  int ExactNumBottomBlobs() const override { return 1; }
  int MinTopBlobs() const override { return 1; }

 protected:
  void Forward_cpu(const BlobVec& bottom, const BlobVec& top) override;
  void Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override;
#ifdef DOPPIO_WITH_CUDA
  void Forward_gpu(const BlobVec& bottom, const BlobVec& top) override;
  void Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override;
#endif

 private:
  int slice_axis_ = 1;
  int num_slices_ = 1;
  int slice_size_ = 1;
};

}  // namespace doppio
