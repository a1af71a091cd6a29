#include "doppio/core/layer_kernels.cuh"
#include "doppio/layers/bnll_layer.hpp"

namespace doppio {

namespace {
template <typename Dtype>
__global__ void BNLLForward(long long n, const Dtype* x, Dtype* y) {
  DOPPIO_KERNEL_LOOP(i, n) { y[i] = x[i] > Dtype(0) ? x[i] + log1p(exp(-x[i])) : log1p(exp(x[i])); }
}

template <typename Dtype>
__global__ void BNLLBackward(long long n, const Dtype* y, const Dtype* dy, Dtype* dx) {
  // dy/dx = sigmoid(x) = 1 - exp(-y), read from the output (see the CPU code).
  DOPPIO_KERNEL_LOOP(i, n) { dx[i] = -dy[i] * expm1(-y[i]); }
}
}  // namespace

template <typename Dtype>
void BNLLLayer<Dtype>::Forward_gpu(const BlobVec& bottom, const BlobVec& top) {
  GpuContext& gpu = this->gpu();
  const long long count = bottom[0]->count();
  LaunchKernel("BNLLForward", gpu, count, BNLLForward<Dtype>, count, bottom[0]->gpu_data(gpu),
               top[0]->mutable_gpu_data(gpu));
}

template <typename Dtype>
void BNLLLayer<Dtype>::Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                                    const BlobVec& bottom) {
  if (!propagate_down[0]) return;
  GpuContext& gpu = this->gpu();
  const long long count = bottom[0]->count();
  LaunchKernel("BNLLBackward", gpu, count, BNLLBackward<Dtype>, count, top[0]->gpu_data(gpu),
               top[0]->gpu_diff(gpu), bottom[0]->mutable_gpu_diff(gpu));
}

DOPPIO_INSTANTIATE_LAYER_GPU_FUNCS(BNLLLayer);

}  // namespace doppio
