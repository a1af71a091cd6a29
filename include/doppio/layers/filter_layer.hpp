#pragma once

#include <memory>
#include <vector>

#include "doppio/core/layer.hpp"
#include "doppio/core/synced_memory.hpp"

namespace doppio {

// Keeps the items a selector picks: the last bottom is the selector, (N) or (N, 1, ...), and
// each other bottom i, (N, ...), gives top i with only the items whose selector value is
// non-zero, in order. The tops' batch size therefore changes with the data (0 when nothing is
// selected); at set-up it is N. Backward passes the gradient of each kept item back and zero
// to the dropped ones; the selector takes no gradient.
template <typename Dtype>
class FilterLayer : public Layer<Dtype> {
 public:
  using BlobVec = typename Layer<Dtype>::BlobVec;

  explicit FilterLayer(const LayerParameter& param) : Layer<Dtype>(param) {}
  void LayerSetUp(const BlobVec& bottom, const BlobVec& top) override;
  void Reshape(const BlobVec& bottom, const BlobVec& top) override;
  const char* type() const override { return "Filter"; }

  int MinBottomBlobs() const override { return 2; }
  int MinTopBlobs() const override { return 1; }
  bool AllowForceBackward(int bottom_index) const override {
    return bottom_index + 1 < static_cast<int>(this->layer_param_.bottom_size());
  }

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
  void CheckSelectorNotPropagated(const std::vector<bool>& propagate_down) const;

  bool first_reshape_ = true;
  std::vector<int> kept_;  // the selected items, in order
#ifdef DOPPIO_WITH_CUDA
  std::shared_ptr<SyncedMemory> kept_device_;
  std::shared_ptr<SyncedMemory> position_device_;  // per bottom item: its top row, or -1
#endif
};

}  // namespace doppio
