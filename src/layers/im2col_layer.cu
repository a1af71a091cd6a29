#include "doppio/core/layer_kernels.cuh"
#include "doppio/device/im2col_gpu.hpp"
#include "doppio/layers/im2col_layer.hpp"

namespace doppio {

template <typename Dtype>
void Im2colLayer<Dtype>::Forward_gpu(const BlobVec& bottom, const BlobVec& top) {
  GpuContext& gpu = this->gpu();
  const Dtype* in = bottom[0]->gpu_data(gpu);
  Dtype* out = top[0]->mutable_gpu_data(gpu);
  for (int n = 0; n < num_; ++n) {
    im2col_gpu(gpu, in + static_cast<long long>(n) * bottom_dim_, channels_, height_, width_,
               kernel_h_, kernel_w_, pad_h_, pad_w_, stride_h_, stride_w_, dilation_h_, dilation_w_,
               out + static_cast<long long>(n) * top_dim_);
  }
}

template <typename Dtype>
void Im2colLayer<Dtype>::Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                                      const BlobVec& bottom) {
  if (!propagate_down[0]) return;
  GpuContext& gpu = this->gpu();
  const Dtype* top_diff = top[0]->gpu_diff(gpu);
  Dtype* bottom_diff = bottom[0]->mutable_gpu_diff(gpu);
  for (int n = 0; n < num_; ++n) {
    col2im_gpu(gpu, top_diff + static_cast<long long>(n) * top_dim_, channels_, height_, width_,
               kernel_h_, kernel_w_, pad_h_, pad_w_, stride_h_, stride_w_, dilation_h_, dilation_w_,
               bottom_diff + static_cast<long long>(n) * bottom_dim_);
  }
}

DOPPIO_INSTANTIATE_LAYER_GPU_FUNCS(Im2colLayer);

}  // namespace doppio
