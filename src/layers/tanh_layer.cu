#include "doppio/core/layer_kernels.cuh"
#include "doppio/layers/tanh_layer.hpp"

namespace doppio {

namespace {
template <typename Dtype>
__global__ void TanHForward(long long n, const Dtype* x, Dtype* y) {
  DOPPIO_KERNEL_LOOP(i, n) { y[i] = tanh(x[i]); }
}

template <typename Dtype>
__global__ void TanHBackward(long long n, const Dtype* y, const Dtype* dy, Dtype* dx) {
  DOPPIO_KERNEL_LOOP(i, n) { dx[i] = dy[i] * (Dtype(1) - y[i] * y[i]); }
}
}  // namespace

template <typename Dtype>
void TanHLayer<Dtype>::Forward_gpu(const BlobVec& bottom, const BlobVec& top) {
  GpuContext& gpu = this->gpu();
  const long long count = bottom[0]->count();
  LaunchKernel("TanHForward", gpu, count, TanHForward<Dtype>, count, bottom[0]->gpu_data(gpu),
               top[0]->mutable_gpu_data(gpu));
}

template <typename Dtype>
void TanHLayer<Dtype>::Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                                    const BlobVec& bottom) {
  if (!propagate_down[0]) return;
  GpuContext& gpu = this->gpu();
  const long long count = bottom[0]->count();
  LaunchKernel("TanHBackward", gpu, count, TanHBackward<Dtype>, count, top[0]->gpu_data(gpu),
               top[0]->gpu_diff(gpu), bottom[0]->mutable_gpu_diff(gpu));
}

DOPPIO_INSTANTIATE_LAYER_GPU_FUNCS(TanHLayer);

}  // namespace doppio
