#pragma once

#include <vector>

#include "doppio/core/gpu_storage.hpp"
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
  // On the GPU under BF16 and FP16 (with more than one bottom: one shares its buffers).
  LayerPrecision precision() const override {
    return StoragePrecision(this->layer_param_.bottom_size() > 1 ? GpuStorageOf(*this)
                                                                 : GpuStorage::kFloat32);
  }

 protected:
  void Forward_cpu(const BlobVec& bottom, const BlobVec& top) override;
  void Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override;
#ifdef DOPPIO_WITH_CUDA
  void Forward_gpu(const BlobVec& bottom, const BlobVec& top) override;
  void Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override;
  std::vector<GpuStorageReader> input_readers_;  // one per bottom
  GpuStorageReader diff_reader_;
#endif

  int concat_axis_ = 1;
  // Product of the axes before the concat axis, and of those after it.
  int num_concats_ = 1;
  int concat_input_size_ = 1;
};

}  // namespace doppio
