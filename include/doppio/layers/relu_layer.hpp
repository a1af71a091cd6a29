#pragma once

#include <vector>

#include "doppio/layers/neuron_layer.hpp"
#include "doppio/util/host_device.hpp"

namespace doppio {

// ReLU's value, one rule for the CPU and the GPU kernels, as PyTorch and cuDNN
// (CUDNN_PROPAGATE_NAN) compute it: a NaN passes through (NaN > 0 is false, so the negative
// branch must not turn it into 0), and a slope of 0 gives 0 for every negative x, -inf
// included (0 * -inf would be NaN).
template <typename Dtype>
DOPPIO_HOST_DEVICE inline Dtype ReLUValue(Dtype x, Dtype slope) {
  if (x > Dtype(0) || x != x) return x;
  return slope == Dtype(0) ? Dtype(0) : slope * x;
}

// y = max(x, 0) + negative_slope * min(x, 0).
template <typename Dtype>
class ReLULayer : public NeuronLayer<Dtype> {
 public:
  using BlobVec = typename Layer<Dtype>::BlobVec;

  explicit ReLULayer(const LayerParameter& param) : NeuronLayer<Dtype>(param) {}
  void LayerSetUp(const BlobVec& bottom, const BlobVec& top) override;
  const char* type() const override { return "ReLU"; }

 protected:
  void Forward_cpu(const BlobVec& bottom, const BlobVec& top) override;
  void Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override;
#ifdef DOPPIO_WITH_CUDA
  void Forward_gpu(const BlobVec& bottom, const BlobVec& top) override;
  void Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override;
#endif

 protected:  // the cuDNN engine derives from this class
  Dtype negative_slope_ = 0;
};

}  // namespace doppio
