#include "doppio/layers/cudnn_pooling_layer.hpp"

#ifdef DOPPIO_WITH_CUDNN

#include "doppio/core/layer_registry.hpp"

namespace doppio {

template <typename Dtype>
CudnnPoolingLayer<Dtype>::~CudnnPoolingLayer() {
  if (pooling_desc_) cudnnDestroyPoolingDescriptor(pooling_desc_);
}

template <typename Dtype>
std::string CudnnPoolingLayer<Dtype>::Unsupported(const LayerParameter& param) {
  if (param.pooling_param().pool() == PoolingParameter::STOCHASTIC) {
    return "cuDNN has no stochastic pooling";
  }
  if (param.top_size() > 1) return "cuDNN pooling does not output the argmax mask (top 2)";
  return "";
}

DOPPIO_INSTANTIATE_CLASS(CudnnPoolingLayer);
DOPPIO_REGISTER_LAYER_ENGINE_IF(Pooling, CUDNN, CudnnPoolingLayer,
                                CudnnPoolingLayer<float>::Unsupported);

}  // namespace doppio

#endif  // DOPPIO_WITH_CUDNN
