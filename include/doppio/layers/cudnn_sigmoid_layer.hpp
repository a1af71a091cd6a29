#pragma once

#ifdef DOPPIO_WITH_CUDNN

#include "doppio/layers/cudnn_activation_layer.hpp"
#include "doppio/layers/sigmoid_layer.hpp"

namespace doppio {

// Sigmoid on cuDNN (engine CUDNN, the default on the GPU). On the CPU it is the CAFFE SigmoidLayer.
template <typename Dtype>
class CudnnSigmoidLayer : public CudnnActivationLayer<SigmoidLayer<Dtype>> {
 public:
  explicit CudnnSigmoidLayer(const LayerParameter& param)
      : CudnnActivationLayer<SigmoidLayer<Dtype>>(param, CUDNN_ACTIVATION_SIGMOID) {}
};

}  // namespace doppio

#endif  // DOPPIO_WITH_CUDNN
