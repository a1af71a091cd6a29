#pragma once

#include <vector>

#include "doppio/core/gpu_storage.hpp"
#include "doppio/core/layer.hpp"

namespace doppio {

// Hands one bottom to several consumers: every top shares the bottom's data, and Backward
// sums the tops' diffs into the bottom's diff. Net inserts these where a blob fans out.
template <typename Dtype>
class SplitLayer : public Layer<Dtype> {
 public:
  using BlobVec = typename Layer<Dtype>::BlobVec;

  explicit SplitLayer(const LayerParameter& param) : Layer<Dtype>(param) {}
  void Reshape(const BlobVec& bottom, const BlobVec& top) override;

  const char* type() const override { return "Split"; }
  int ExactNumBottomBlobs() const override { return 1; }
  int MinTopBlobs() const override { return 1; }
  // On the GPU under BF16 and FP16 the tops' diffs are summed into a 16-bit bottom diff.
  LayerPrecision precision() const override { return StoragePrecision(GpuStorageOf(*this)); }

 protected:
  void Forward_cpu(const BlobVec& bottom, const BlobVec& top) override {}
  void Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override;
#ifdef DOPPIO_WITH_CUDA
  void Forward_gpu(const BlobVec& bottom, const BlobVec& top) override;
  void Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override;
  std::vector<GpuStorageReader> diff_readers_;  // one per top
#endif
};

}  // namespace doppio
