#pragma once

#ifdef DOPPIO_WITH_CUDNN

#include "doppio/layers/cudnn_activation_layer.hpp"
#include "doppio/layers/tanh_layer.hpp"

namespace doppio {

// TanH on cuDNN (engine CUDNN, the default on the GPU). On the CPU it is the CAFFE TanHLayer.
template <typename Dtype>
class CudnnTanHLayer : public CudnnActivationLayer<TanHLayer<Dtype>> {
 public:
  explicit CudnnTanHLayer(const LayerParameter& param)
      : CudnnActivationLayer<TanHLayer<Dtype>>(param, CUDNN_ACTIVATION_TANH) {}
};

}  // namespace doppio

#endif  // DOPPIO_WITH_CUDNN
