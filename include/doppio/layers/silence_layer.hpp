#pragma once

#include <vector>

#include "doppio/core/layer.hpp"

namespace doppio {

// Consumes any number of bottoms and produces nothing, so that unused blobs are not
// reported as net outputs. Their gradient is zero.
template <typename Dtype>
class SilenceLayer : public Layer<Dtype> {
 public:
  using BlobVec = typename Layer<Dtype>::BlobVec;

  explicit SilenceLayer(const LayerParameter& param) : Layer<Dtype>(param) {}
  void Reshape(const BlobVec& bottom, const BlobVec& top) override {}
  const char* type() const override { return "Silence"; }

  int MinBottomBlobs() const override { return 1; }
  int ExactNumTopBlobs() const override { return 0; }

 protected:
  void Forward_cpu(const BlobVec& bottom, const BlobVec& top) override {}
  void Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override;
#ifdef DOPPIO_WITH_CUDA
  void Forward_gpu(const BlobVec& bottom, const BlobVec& top) override;
  void Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override;
#endif
};

}  // namespace doppio
