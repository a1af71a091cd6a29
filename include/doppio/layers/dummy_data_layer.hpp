#pragma once

#include <memory>
#include <vector>

#include "doppio/core/filler.hpp"
#include "doppio/core/layer.hpp"

namespace doppio {

// Produces tops of fixed shapes (dummy_data_param.shape, or the legacy num / channels /
// height / width) filled by data_filler: one filler for all tops or one per top, constant 0
// by default. Constant tops are filled once at set-up; the others are refilled on every
// Forward from the layer's rng().
template <typename Dtype>
class DummyDataLayer : public Layer<Dtype> {
 public:
  using BlobVec = typename Layer<Dtype>::BlobVec;

  explicit DummyDataLayer(const LayerParameter& param) : Layer<Dtype>(param) {}
  void LayerSetUp(const BlobVec& bottom, const BlobVec& top) override;
  // The shapes are fixed at set-up.
  void Reshape(const BlobVec& bottom, const BlobVec& top) override {}
  const char* type() const override { return "DummyData"; }

  int ExactNumBottomBlobs() const override { return 0; }
  int MinTopBlobs() const override { return 1; }

 protected:
  void Forward_cpu(const BlobVec& bottom, const BlobVec& top) override;
  void Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {}
#ifdef DOPPIO_WITH_CUDA
  void Forward_gpu(const BlobVec& bottom, const BlobVec& top) override;
  void Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override;
#endif

 private:
  // One filler per top (shared fillers appear once per top that uses them).
  std::vector<std::shared_ptr<Filler<Dtype>>> fillers_;
  std::vector<bool> refill_;
};

}  // namespace doppio
