#include "doppio/core/layer_kernels.cuh"
#include "doppio/layers/exp_layer.hpp"

namespace doppio {

namespace {
template <typename Dtype>
__global__ void ExpForward(long long n, const Dtype* x, Dtype inner, Dtype outer, Dtype* y) {
  DOPPIO_KERNEL_LOOP(i, n) { y[i] = outer * exp(inner * x[i]); }
}

template <typename Dtype>
__global__ void ExpBackward(long long n, const Dtype* y, const Dtype* dy, Dtype inner, Dtype* dx) {
  DOPPIO_KERNEL_LOOP(i, n) { dx[i] = dy[i] * y[i] * inner; }
}
}  // namespace

template <typename Dtype>
void ExpLayer<Dtype>::Forward_gpu(const BlobVec& bottom, const BlobVec& top) {
  GpuContext& gpu = this->gpu();
  const long long count = bottom[0]->count();
  LaunchKernel("ExpForward", gpu, count, ExpForward<Dtype>, count, bottom[0]->gpu_data(gpu),
               inner_scale_, outer_scale_, top[0]->mutable_gpu_data(gpu));
}

template <typename Dtype>
void ExpLayer<Dtype>::Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                                   const BlobVec& bottom) {
  if (!propagate_down[0]) return;
  GpuContext& gpu = this->gpu();
  const long long count = bottom[0]->count();
  LaunchKernel("ExpBackward", gpu, count, ExpBackward<Dtype>, count, top[0]->gpu_data(gpu),
               top[0]->gpu_diff(gpu), inner_scale_, bottom[0]->mutable_gpu_diff(gpu));
}

DOPPIO_INSTANTIATE_LAYER_GPU_FUNCS(ExpLayer);

}  // namespace doppio
