#pragma once

#include <memory>
#include <vector>

#include "doppio/core/layer.hpp"
#include "doppio/core/synced_memory.hpp"

namespace doppio {

// Picks items of a batch by index: bottom[0] is (N, ...), bottom[1] holds M indices in
// [0, N), and top is (M, ...) with top[i] = bottom[0][index[i]]. An item may be picked
// several times or not at all; Backward sums the gradients of its picks. The indices take no
// gradient.
template <typename Dtype>
class BatchReindexLayer : public Layer<Dtype> {
 public:
  using BlobVec = typename Layer<Dtype>::BlobVec;

  explicit BatchReindexLayer(const LayerParameter& param) : Layer<Dtype>(param) {}
  void Reshape(const BlobVec& bottom, const BlobVec& top) override;
  const char* type() const override { return "BatchReindex"; }

  int ExactNumBottomBlobs() const override { return 2; }
  int ExactNumTopBlobs() const override { return 1; }
  bool AllowForceBackward(int bottom_index) const override { return bottom_index == 0; }

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
  // The indices as ints, each checked to be an integer in [0, N).
  std::vector<int> CheckedIndices(const Blob<Dtype>& indices, int num) const;

#ifdef DOPPIO_WITH_CUDA
  // Backward on the device: for each bottom item, its picks (positions in the top) lie at
  // picks_[first_[n]] .. picks_[first_[n + 1] - 1].
  std::shared_ptr<SyncedMemory> picks_;
  std::shared_ptr<SyncedMemory> first_;
#endif
};

}  // namespace doppio
