#include "doppio/layers/deconv_layer.hpp"
#include "doppio/util/cuda_kernels.cuh"

namespace doppio {

template <typename Dtype>
void DeconvolutionLayer<Dtype>::Forward_gpu(const BlobVec& bottom, const BlobVec& top) {
  if (this->num_ == 0) return;
  GpuContext& gpu = this->gpu();
  const Dtype* weight = this->blobs_[0]->gpu_data(gpu);
  for (size_t i = 0; i < bottom.size(); ++i) {
    const Dtype* bottom_data = bottom[i]->gpu_data(gpu);
    Dtype* top_data = top[i]->mutable_gpu_data(gpu);
    for (int n = 0; n < this->num_; ++n) {
      this->backward_gpu_gemm(bottom_data + static_cast<size_t>(n) * this->bottom_dim_, weight,
                              top_data + static_cast<size_t>(n) * this->top_dim_);
    }
    if (this->bias_term_) this->forward_gpu_bias(top_data, this->blobs_[1]->gpu_data(gpu));
  }
}

template <typename Dtype>
void DeconvolutionLayer<Dtype>::Backward_gpu(const BlobVec& top,
                                             const std::vector<bool>& propagate_down,
                                             const BlobVec& bottom) {
  if (this->num_ == 0) return;
  GpuContext& gpu = this->gpu();
  const Dtype* weight = this->blobs_[0]->gpu_data(gpu);
  const bool weight_grad = this->param_propagate_down(0);
  const bool bias_grad = this->bias_term_ && this->param_propagate_down(1);
  Dtype* weight_diff = weight_grad ? this->blobs_[0]->mutable_gpu_diff(gpu) : nullptr;
  Dtype* bias_diff = bias_grad ? this->blobs_[1]->mutable_gpu_diff(gpu) : nullptr;
  for (size_t i = 0; i < top.size(); ++i) {
    const Dtype* top_diff = top[i]->gpu_diff(gpu);
    if (bias_grad) this->backward_gpu_bias(bias_diff, top_diff);
    if (!weight_grad && !propagate_down[i]) continue;
    const Dtype* bottom_data = bottom[i]->gpu_data(gpu);
    Dtype* bottom_diff = propagate_down[i] ? bottom[i]->mutable_gpu_diff(gpu) : nullptr;
    for (int n = 0; n < this->num_; ++n) {
      const size_t in_offset = static_cast<size_t>(n) * this->bottom_dim_;
      const size_t out_offset = static_cast<size_t>(n) * this->top_dim_;
      // The convolution's input side is the top here.
      if (weight_grad) {
        this->weight_gpu_gemm(top_diff + out_offset, bottom_data + in_offset, weight_diff);
      }
      if (bottom_diff) {
        this->forward_gpu_gemm(top_diff + out_offset, weight, bottom_diff + in_offset);
      }
    }
  }
}

DOPPIO_INSTANTIATE_LAYER_GPU_FUNCS(DeconvolutionLayer);

}  // namespace doppio
