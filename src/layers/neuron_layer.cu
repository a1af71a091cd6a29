#include "doppio/core/layer_kernels.cuh"
#include "doppio/layers/neuron_layer.hpp"
#include "doppio/util/math_functions.hpp"

namespace doppio {

template <typename Dtype>
void NeuronLayer<Dtype>::KeepInputIfInPlace_gpu(const Blob<Dtype>& bottom, const Blob<Dtype>& top) {
  input_kept_gpu_ = (&bottom == &top);
  if (!input_kept_gpu_) return;
  input_copy_gpu_.ReshapeLike(bottom);
  GpuContext& gpu = this->gpu();
  gpu_copy(gpu, bottom.count(), bottom.gpu_data(gpu), input_copy_gpu_.mutable_gpu_data(gpu));
}

template <typename Dtype>
const Dtype* NeuronLayer<Dtype>::ForwardInput_gpu(const Blob<Dtype>& bottom) {
  GpuContext& gpu = this->gpu();
  return input_kept_gpu_ ? input_copy_gpu_.gpu_data(gpu) : bottom.gpu_data(gpu);
}

template void NeuronLayer<float>::KeepInputIfInPlace_gpu(const Blob<float>&, const Blob<float>&);
template void NeuronLayer<double>::KeepInputIfInPlace_gpu(const Blob<double>&, const Blob<double>&);
template const float* NeuronLayer<float>::ForwardInput_gpu(const Blob<float>&);
template const double* NeuronLayer<double>::ForwardInput_gpu(const Blob<double>&);

}  // namespace doppio
