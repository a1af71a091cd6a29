#ifdef DOPPIO_WITH_CUDNN

#include "doppio/core/layer_kernels.cuh"
#include "doppio/layers/cudnn_pooling_layer.hpp"

namespace doppio {

template <typename Dtype>
bool CudnnPoolingLayer<Dtype>::Prepare() {
  if (!pooling_desc_) DOPPIO_CUDNN_CHECK(cudnnCreatePoolingDescriptor(&pooling_desc_));
  DOPPIO_CUDNN_CHECK(
      cudnnSetPooling2dDescriptor(pooling_desc_, CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING,
                                  CUDNN_PROPAGATE_NAN, this->kernel_h_, this->kernel_w_,
                                  this->pad_h_, this->pad_w_, this->stride_h_, this->stride_w_));
  bottom_desc_.Set4d<Dtype>(this->num_, this->channels_, this->height_, this->width_);
  int n = 0, c = 0, h = 0, w = 0;
  DOPPIO_CUDNN_CHECK(
      cudnnGetPooling2dForwardOutputDim(pooling_desc_, bottom_desc_.get(), &n, &c, &h, &w));
  if (h != this->pooled_height_ || w != this->pooled_width_) return false;
  top_desc_.Set4d<Dtype>(this->num_, this->channels_, this->pooled_height_, this->pooled_width_);
  return true;
}

template <typename Dtype>
void CudnnPoolingLayer<Dtype>::Forward_gpu(const BlobVec& bottom, const BlobVec& top) {
  used_cudnn_ = this->method_ == PoolingParameter::AVE && top[0]->count() > 0 &&
                this->gpu_storage() == GpuStorage::kFloat32 && Prepare();
  if (!used_cudnn_) {
    // MAX (see the class comment), 16 bits, or Caffe's ceiling rule made the output larger
    // than cuDNN's, or the batch is empty.
    PoolingLayer<Dtype>::Forward_gpu(bottom, top);
    return;
  }
  GpuContext& gpu = this->gpu();
  DOPPIO_CUDNN_CHECK(cudnnPoolingForward(gpu.cudnn(), pooling_desc_, CudnnScalar<Dtype>::one(),
                                         bottom_desc_.get(), bottom[0]->gpu_data(gpu),
                                         CudnnScalar<Dtype>::zero(), top_desc_.get(),
                                         top[0]->mutable_gpu_data(gpu)));
}

template <typename Dtype>
void CudnnPoolingLayer<Dtype>::Backward_gpu(const BlobVec& top,
                                            const std::vector<bool>& propagate_down,
                                            const BlobVec& bottom) {
  if (!used_cudnn_) {
    PoolingLayer<Dtype>::Backward_gpu(top, propagate_down, bottom);
    return;
  }
  if (!propagate_down[0]) return;
  GpuContext& gpu = this->gpu();
  DOPPIO_CUDNN_CHECK(cudnnPoolingBackward(
      gpu.cudnn(), pooling_desc_, CudnnScalar<Dtype>::one(), top_desc_.get(), top[0]->gpu_data(gpu),
      top_desc_.get(), top[0]->gpu_diff(gpu), bottom_desc_.get(), bottom[0]->gpu_data(gpu),
      CudnnScalar<Dtype>::zero(), bottom_desc_.get(), bottom[0]->mutable_gpu_diff(gpu)));
}

DOPPIO_INSTANTIATE_LAYER_GPU_FUNCS(CudnnPoolingLayer);

}  // namespace doppio

#endif  // DOPPIO_WITH_CUDNN
