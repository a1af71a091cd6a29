#include "doppio/layers/cudnn_conv_layer.hpp"

#ifdef DOPPIO_WITH_CUDNN

#include <type_traits>

#include "doppio/core/layer_registry.hpp"

namespace doppio {

template <typename Dtype>
CudnnConvolutionLayer<Dtype>::~CudnnConvolutionLayer() {
  if (filter_desc_) cudnnDestroyFilterDescriptor(filter_desc_);
  if (fwd_conv_) cudnnDestroyConvolutionDescriptor(fwd_conv_);
  if (bwd_data_conv_) cudnnDestroyConvolutionDescriptor(bwd_data_conv_);
  if (bwd_filter_conv_) cudnnDestroyConvolutionDescriptor(bwd_filter_conv_);
}

template <typename Dtype>
LayerPrecision CudnnConvolutionLayer<Dtype>::precision() const {
  // BaseMathType's rule: float32 on TF32 tensor cores where the options allow it.
  const bool tf32 =
      std::is_same<Dtype, float>::value && this->gpu_context() && this->gpu().options().tf32_conv;
  return {FP32, tf32 ? TF32 : FP32};
}

DOPPIO_INSTANTIATE_CLASS(CudnnConvolutionLayer);
DOPPIO_REGISTER_LAYER_ENGINE(Convolution, CUDNN, CudnnConvolutionLayer);

}  // namespace doppio

#endif  // DOPPIO_WITH_CUDNN
