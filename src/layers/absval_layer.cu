#include "doppio/core/layer_kernels.cuh"
#include "doppio/layers/absval_layer.hpp"

namespace doppio {

namespace {
template <typename Dtype>
__global__ void AbsValForward(long long n, const Dtype* x, Dtype* y) {
  DOPPIO_KERNEL_LOOP(i, n) { y[i] = fabs(x[i]); }
}

template <typename Dtype>
__global__ void AbsValBackward(long long n, const Dtype* x, const Dtype* dy, Dtype* dx) {
  DOPPIO_KERNEL_LOOP(i, n) {
    dx[i] = x[i] > Dtype(0) ? dy[i] : (x[i] < Dtype(0) ? -dy[i] : Dtype(0));
  }
}
}  // namespace

template <typename Dtype>
void AbsValLayer<Dtype>::Forward_gpu(const BlobVec& bottom, const BlobVec& top) {
  this->KeepInputIfInPlace_gpu(*bottom[0], *top[0]);
  GpuContext& gpu = this->gpu();
  const long long count = bottom[0]->count();
  LaunchKernel("AbsValForward", gpu, count, AbsValForward<Dtype>, count, bottom[0]->gpu_data(gpu),
               top[0]->mutable_gpu_data(gpu));
}

template <typename Dtype>
void AbsValLayer<Dtype>::Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                                      const BlobVec& bottom) {
  if (!propagate_down[0]) return;
  GpuContext& gpu = this->gpu();
  const long long count = bottom[0]->count();
  const Dtype* x = this->ForwardInput_gpu(*bottom[0]);
  LaunchKernel("AbsValBackward", gpu, count, AbsValBackward<Dtype>, count, x, top[0]->gpu_diff(gpu),
               bottom[0]->mutable_gpu_diff(gpu));
}

DOPPIO_INSTANTIATE_LAYER_GPU_FUNCS(AbsValLayer);

}  // namespace doppio
