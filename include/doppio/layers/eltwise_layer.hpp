#pragma once

#include <vector>

#include "doppio/core/gpu_storage.hpp"
#include "doppio/core/layer.hpp"

namespace doppio {

// Combines bottoms of identical shape element by element: PROD, SUM (weighted by coeff) or
// MAX (remembering which bottom won, for the backward pass).
template <typename Dtype>
class EltwiseLayer : public Layer<Dtype> {
 public:
  using BlobVec = typename Layer<Dtype>::BlobVec;

  explicit EltwiseLayer(const LayerParameter& param) : Layer<Dtype>(param) {}
  void LayerSetUp(const BlobVec& bottom, const BlobVec& top) override;
  void Reshape(const BlobVec& bottom, const BlobVec& top) override;

  const char* type() const override { return "Eltwise"; }
  int MinBottomBlobs() const override { return 2; }
  int ExactNumTopBlobs() const override { return 1; }
  // SUM of two bottoms (a residual connection) runs in 16 bits on the GPU under BF16 and FP16.
  LayerPrecision precision() const override { return StoragePrecision(gpu_storage()); }

 protected:
  void Forward_cpu(const BlobVec& bottom, const BlobVec& top) override;
  void Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override;
#ifdef DOPPIO_WITH_CUDA
  void Forward_gpu(const BlobVec& bottom, const BlobVec& top) override;
  void Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override;
  void Forward_gpu16(const BlobVec& bottom, const BlobVec& top, GpuStorage storage);
  void Backward_gpu16(const BlobVec& top, const std::vector<bool>& propagate_down,
                      const BlobVec& bottom, GpuStorage storage);
  GpuStorageReader input_readers_[2];
  GpuStorageReader diff_reader_;
#endif

  // What the GPU kernels run in: 16 bits for SUM of two bottoms under BF16 and FP16.
  GpuStorage gpu_storage() const {
    return op_ == EltwiseParameter::SUM && this->layer_param_.bottom_size() == 2
               ? GpuStorageOf(*this)
               : GpuStorage::kFloat32;
  }

  EltwiseParameter::EltwiseOp op_ = EltwiseParameter::SUM;
  std::vector<Dtype> coeffs_;
  bool stable_prod_grad_ = true;
  // MAX: index of the bottom that supplied each top element.
  std::vector<int> max_idx_;
#ifdef DOPPIO_WITH_CUDA
  std::shared_ptr<SyncedMemory> max_idx_gpu_;  // max_idx_ of Forward_gpu, on the device
#endif
};

}  // namespace doppio
