#pragma once

#ifdef DOPPIO_WITH_CUDNN

#include <string>

#include "doppio/layers/cudnn_activation_layer.hpp"
#include "doppio/layers/relu_layer.hpp"

namespace doppio {

// ReLU on cuDNN (engine CUDNN, the default on the GPU) when negative_slope is 0; a leaky ReLU uses
// the CAFFE engine. On the CPU it is the CAFFE ReLULayer.
template <typename Dtype>
class CudnnReLULayer : public CudnnActivationLayer<ReLULayer<Dtype>> {
 public:
  explicit CudnnReLULayer(const LayerParameter& param)
      : CudnnActivationLayer<ReLULayer<Dtype>>(param, CUDNN_ACTIVATION_RELU) {}

  static std::string Unsupported(const LayerParameter& param);
};

}  // namespace doppio

#endif  // DOPPIO_WITH_CUDNN
