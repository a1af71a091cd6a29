#ifdef DOPPIO_WITH_CUDNN

#include "doppio/core/layer_kernels.cuh"
#include "doppio/layers/cudnn_activation_layer.hpp"
#include "doppio/layers/relu_layer.hpp"
#include "doppio/layers/sigmoid_layer.hpp"
#include "doppio/layers/tanh_layer.hpp"

namespace doppio {

template <typename Base>
void CudnnActivationLayer<Base>::Forward_gpu(const BlobVec& bottom, const BlobVec& top) {
  GpuContext& gpu = this->gpu();
  activation_.Forward(gpu, bottom[0]->count(), bottom[0]->gpu_data(gpu),
                      top[0]->mutable_gpu_data(gpu));
}

template <typename Base>
void CudnnActivationLayer<Base>::Backward_gpu(const BlobVec& top,
                                              const std::vector<bool>& propagate_down,
                                              const BlobVec& bottom) {
  if (!propagate_down[0]) return;
  GpuContext& gpu = this->gpu();
  // In place the bottom's data is the output; sigmoid and tanh take their gradient from the
  // output, so that is enough, and their CAFFE kernels read the top as well. (ReLU's backward
  // is the CAFFE kernel: see CudnnReLULayer.)
  activation_.Backward(gpu, bottom[0]->count(), top[0]->gpu_data(gpu), top[0]->gpu_diff(gpu),
                       bottom[0]->gpu_data(gpu), bottom[0]->mutable_gpu_diff(gpu));
}

template class CudnnActivationLayer<ReLULayer<float>>;
template class CudnnActivationLayer<ReLULayer<double>>;
template class CudnnActivationLayer<SigmoidLayer<float>>;
template class CudnnActivationLayer<SigmoidLayer<double>>;
template class CudnnActivationLayer<TanHLayer<float>>;
template class CudnnActivationLayer<TanHLayer<double>>;

}  // namespace doppio

#endif  // DOPPIO_WITH_CUDNN
