#include "doppio/core/layer_kernels.cuh"
#include "doppio/layers/inner_product_layer.hpp"
#include "doppio/util/math_functions.hpp"

namespace doppio {

template <typename Dtype>
void InnerProductLayer<Dtype>::Forward_gpu(const BlobVec& bottom, const BlobVec& top) {
  if (M_ == 0) return;
  GpuContext& gpu = this->gpu();
  const Dtype* in = bottom[0]->gpu_data(gpu);
  const Dtype* weight = this->blobs_[0]->gpu_data(gpu);
  Dtype* out = top[0]->mutable_gpu_data(gpu);
  gpu_gemm<Dtype>(gpu, Trans::kNo, transpose_ ? Trans::kNo : Trans::kYes, M_, N_, K_, Dtype(1), in,
                  weight, Dtype(0), out);
  if (bias_term_) {
    gpu_gemm<Dtype>(gpu, Trans::kNo, Trans::kNo, M_, N_, 1, Dtype(1),
                    bias_multiplier_.gpu_data(gpu), this->blobs_[1]->gpu_data(gpu), Dtype(1), out);
  }
}

template <typename Dtype>
void InnerProductLayer<Dtype>::Backward_gpu(const BlobVec& top,
                                            const std::vector<bool>& propagate_down,
                                            const BlobVec& bottom) {
  if (M_ == 0) return;
  GpuContext& gpu = this->gpu();
  const Dtype* top_diff = top[0]->gpu_diff(gpu);
  const Dtype* in = bottom[0]->gpu_data(gpu);
  if (this->param_propagate_down(0)) {
    Dtype* weight_diff = this->blobs_[0]->mutable_gpu_diff(gpu);
    if (transpose_) {
      gpu_gemm<Dtype>(gpu, Trans::kYes, Trans::kNo, K_, N_, M_, Dtype(1), in, top_diff, Dtype(1),
                      weight_diff);
    } else {
      gpu_gemm<Dtype>(gpu, Trans::kYes, Trans::kNo, N_, K_, M_, Dtype(1), top_diff, in, Dtype(1),
                      weight_diff);
    }
  }
  if (bias_term_ && this->param_propagate_down(1)) {
    gpu_gemv<Dtype>(gpu, Trans::kYes, M_, N_, Dtype(1), top_diff, bias_multiplier_.gpu_data(gpu),
                    Dtype(1), this->blobs_[1]->mutable_gpu_diff(gpu));
  }
  if (propagate_down[0]) {
    gpu_gemm<Dtype>(gpu, Trans::kNo, transpose_ ? Trans::kYes : Trans::kNo, M_, K_, N_, Dtype(1),
                    top_diff, this->blobs_[0]->gpu_data(gpu), Dtype(0),
                    bottom[0]->mutable_gpu_diff(gpu));
  }
}

DOPPIO_INSTANTIATE_LAYER_GPU_FUNCS(InnerProductLayer);

}  // namespace doppio
