#include "doppio/core/layer_kernels.cuh"
#include "doppio/layers/elu_layer.hpp"

namespace doppio {

namespace {
template <typename Dtype>
__global__ void ELUForward(long long n, const Dtype* x, Dtype alpha, Dtype* y) {
  DOPPIO_KERNEL_LOOP(i, n) { y[i] = x[i] > Dtype(0) ? x[i] : alpha * expm1(x[i]); }
}

template <typename Dtype>
__global__ void ELUBackward(long long n, const Dtype* x, const Dtype* y, const Dtype* dy,
                            Dtype alpha, Dtype* dx) {
  // For x <= 0, dy/dx = alpha * exp(x) = y + alpha.
  DOPPIO_KERNEL_LOOP(i, n) { dx[i] = x[i] > Dtype(0) ? dy[i] : dy[i] * (y[i] + alpha); }
}
}  // namespace

template <typename Dtype>
void ELULayer<Dtype>::Forward_gpu(const BlobVec& bottom, const BlobVec& top) {
  if (alpha_ < 0) this->KeepInputIfInPlace_gpu(*bottom[0], *top[0]);
  GpuContext& gpu = this->gpu();
  const long long count = bottom[0]->count();
  LaunchKernel("ELUForward", gpu, count, ELUForward<Dtype>, count, bottom[0]->gpu_data(gpu), alpha_,
               top[0]->mutable_gpu_data(gpu));
}

template <typename Dtype>
void ELULayer<Dtype>::Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                                   const BlobVec& bottom) {
  if (!propagate_down[0]) return;
  GpuContext& gpu = this->gpu();
  const long long count = bottom[0]->count();
  const Dtype* x = this->ForwardInput_gpu(*bottom[0]);
  LaunchKernel("ELUBackward", gpu, count, ELUBackward<Dtype>, count, x, top[0]->gpu_data(gpu),
               top[0]->gpu_diff(gpu), alpha_, bottom[0]->mutable_gpu_diff(gpu));
}

DOPPIO_INSTANTIATE_LAYER_GPU_FUNCS(ELULayer);

}  // namespace doppio
