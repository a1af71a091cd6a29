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
cudnnMathType_t CudnnConvolutionLayer<Dtype>::BaseMathType() const {
  // 16-bit data on tensor cores. As PyTorch: float32 may use TF32 tensor cores only when
  // allowed; FMA math forbids them.
  if (GpuStorageOf(*this) != GpuStorage::kFloat32) return CUDNN_TENSOR_OP_MATH;
  const bool fp32 = std::is_same<Dtype, float>::value;
  return fp32 && !this->gpu().options().tf32_conv ? CUDNN_FMA_MATH : CUDNN_DEFAULT_MATH;
}

template <typename Dtype>
LayerPrecision CudnnConvolutionLayer<Dtype>::precision() const {
  const GpuStorage storage = GpuStorageOf(*this);
  if (storage != GpuStorage::kFloat32) return StoragePrecision(storage);
  // Before the net gives the layer its device, nothing has chosen TF32 yet.
  const bool tf32 = std::is_same<Dtype, float>::value && this->gpu_context() &&
                    BaseMathType() == CUDNN_DEFAULT_MATH;
  return {FP32, tf32 ? TF32 : FP32};
}

DOPPIO_INSTANTIATE_CLASS(CudnnConvolutionLayer);
DOPPIO_REGISTER_LAYER_ENGINE(Convolution, CUDNN, CudnnConvolutionLayer);

}  // namespace doppio

#endif  // DOPPIO_WITH_CUDNN
