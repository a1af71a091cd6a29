#pragma once

#ifdef DOPPIO_WITH_CUDNN

#include <string>
#include <vector>

#include "doppio/layers/cudnn_activation_layer.hpp"
#include "doppio/layers/relu_layer.hpp"

namespace doppio {

// ReLU on cuDNN (engine CUDNN, the default on the GPU) when negative_slope is 0; a leaky ReLU uses
// the CAFFE engine. On the CPU it is the CAFFE ReLULayer.
//
// Backward runs the CAFFE kernel, which takes the sign from the bottom: cuDNN's takes it from
// the top, and a later layer running in place on a top of its own (Scale by a negative
// factor, say) changes that sign before backward runs (the hazard of Caffe issue 2688). The
// bottom is intact then, or, in place, is the top, whose sign is the input's. Both kernels
// are one element-wise pass, so nothing is lost.
template <typename Dtype>
class CudnnReLULayer : public CudnnActivationLayer<ReLULayer<Dtype>> {
 public:
  using typename ReLULayer<Dtype>::BlobVec;
  explicit CudnnReLULayer(const LayerParameter& param)
      : CudnnActivationLayer<ReLULayer<Dtype>>(param, CUDNN_ACTIVATION_RELU) {}

  static std::string Unsupported(const LayerParameter& param);

 protected:
  // In 16 bits (BF16, FP16) the CAFFE kernel runs forward too: one element-wise pass either
  // way, and it reads and writes the blobs' 16-bit storage.
  void Forward_gpu(const BlobVec& bottom, const BlobVec& top) override {
    if (this->gpu_storage() != GpuStorage::kFloat32) {
      ReLULayer<Dtype>::Forward_gpu(bottom, top);
    } else {
      CudnnActivationLayer<ReLULayer<Dtype>>::Forward_gpu(bottom, top);
    }
  }
  void Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    ReLULayer<Dtype>::Backward_gpu(top, propagate_down, bottom);
  }
};

}  // namespace doppio

#endif  // DOPPIO_WITH_CUDNN
