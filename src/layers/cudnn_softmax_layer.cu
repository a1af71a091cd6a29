#ifdef DOPPIO_WITH_CUDNN

#include "doppio/core/layer_kernels.cuh"
#include "doppio/layers/cudnn_softmax_layer.hpp"

namespace doppio {

template <typename Dtype>
void CudnnSoftmaxLayer<Dtype>::Forward_gpu(const BlobVec& bottom, const BlobVec& top) {
  if (this->outer_num_ == 0 || this->channels_ == 0 || this->inner_num_ == 0) return;
  GpuContext& gpu = this->gpu();
  desc_.Set4d<Dtype>(this->outer_num_, this->channels_, this->inner_num_, 1);
  DOPPIO_CUDNN_CHECK(
      cudnnSoftmaxForward(gpu.cudnn(), CUDNN_SOFTMAX_ACCURATE, CUDNN_SOFTMAX_MODE_CHANNEL,
                          CudnnScalar<Dtype>::one(), desc_.get(), bottom[0]->gpu_data(gpu),
                          CudnnScalar<Dtype>::zero(), desc_.get(), top[0]->mutable_gpu_data(gpu)));
}

template <typename Dtype>
void CudnnSoftmaxLayer<Dtype>::Backward_gpu(const BlobVec& top,
                                            const std::vector<bool>& propagate_down,
                                            const BlobVec& bottom) {
  if (!propagate_down[0]) return;
  if (this->outer_num_ == 0 || this->channels_ == 0 || this->inner_num_ == 0) return;
  GpuContext& gpu = this->gpu();
  desc_.Set4d<Dtype>(this->outer_num_, this->channels_, this->inner_num_, 1);
  DOPPIO_CUDNN_CHECK(cudnnSoftmaxBackward(
      gpu.cudnn(), CUDNN_SOFTMAX_ACCURATE, CUDNN_SOFTMAX_MODE_CHANNEL, CudnnScalar<Dtype>::one(),
      desc_.get(), top[0]->gpu_data(gpu), desc_.get(), top[0]->gpu_diff(gpu),
      CudnnScalar<Dtype>::zero(), desc_.get(), bottom[0]->mutable_gpu_diff(gpu)));
}

DOPPIO_INSTANTIATE_LAYER_GPU_FUNCS(CudnnSoftmaxLayer);

}  // namespace doppio

#endif  // DOPPIO_WITH_CUDNN
