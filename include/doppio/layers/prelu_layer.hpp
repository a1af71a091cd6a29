#pragma once

#include <vector>

#include "doppio/layers/neuron_layer.hpp"

namespace doppio {

// Parametric ReLU: y = max(x, 0) + a_c * min(x, 0), with a learned slope a_c per channel
// (axis 1), or one slope for all channels when channel_shared. The slopes are blobs_[0],
// filled by prelu_param.filler (default constant 0.25).
template <typename Dtype>
class PReLULayer : public NeuronLayer<Dtype> {
 public:
  using BlobVec = typename Layer<Dtype>::BlobVec;

  explicit PReLULayer(const LayerParameter& param) : NeuronLayer<Dtype>(param) {}
  void LayerSetUp(const BlobVec& bottom, const BlobVec& top) override;
  void Reshape(const BlobVec& bottom, const BlobVec& top) override;
  const char* type() const override { return "PReLU"; }

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
  bool channel_shared_ = false;
  int channels_ = 0;
#ifdef DOPPIO_WITH_CUDA
  Blob<Dtype> channel_sums_;  // per-channel slope gradients before a shared slope adds them
#endif
};

}  // namespace doppio
