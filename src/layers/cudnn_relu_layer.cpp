#include "doppio/layers/cudnn_relu_layer.hpp"

#ifdef DOPPIO_WITH_CUDNN

#include "doppio/core/layer_registry.hpp"

namespace doppio {

template <typename Dtype>
std::string CudnnReLULayer<Dtype>::Unsupported(const LayerParameter& param) {
  return param.relu_param().negative_slope() != 0.f
             ? "cuDNN has no leaky ReLU (relu_param.negative_slope is not 0)"
             : "";
}

DOPPIO_INSTANTIATE_CLASS(CudnnReLULayer);
DOPPIO_REGISTER_LAYER_ENGINE_IF(ReLU, CUDNN, CudnnReLULayer, CudnnReLULayer<float>::Unsupported);

}  // namespace doppio

#endif  // DOPPIO_WITH_CUDNN
