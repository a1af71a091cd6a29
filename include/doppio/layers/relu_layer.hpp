#pragma once

#include <vector>

#include "doppio/core/gpu_storage.hpp"
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
  // 16 bits on the GPU under BF16 and FP16 where negative_slope is not negative (a leaky
  // ReLU in place keeps its input in fp32, NeuronLayer::KeepInputIfInPlace_gpu).
  LayerPrecision precision() const override { return StoragePrecision(gpu_storage()); }

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
  GpuStorage gpu_storage() const {
    return negative_slope_ < 0 ? GpuStorage::kFloat32 : GpuStorageOf(*this);
  }

  Dtype negative_slope_ = 0;
#ifdef DOPPIO_WITH_CUDA
  GpuStorageReader input_reader_;
  GpuStorageReader diff_reader_;
#endif
};

}  // namespace doppio
