#include "doppio/core/layer_kernels.cuh"
#include "doppio/layers/sigmoid_layer.hpp"

namespace doppio {

namespace {
template <typename Dtype>
__global__ void SigmoidForward(long long n, const Dtype* x, Dtype* y) {
  DOPPIO_KERNEL_LOOP(i, n) { y[i] = Dtype(1) / (Dtype(1) + exp(-x[i])); }
}

template <typename Dtype>
__global__ void SigmoidBackward(long long n, const Dtype* y, const Dtype* dy, Dtype* dx) {
  DOPPIO_KERNEL_LOOP(i, n) { dx[i] = dy[i] * y[i] * (Dtype(1) - y[i]); }
}
}  // namespace

template <typename Dtype>
void SigmoidLayer<Dtype>::Forward_gpu(const BlobVec& bottom, const BlobVec& top) {
  GpuContext& gpu = this->gpu();
  const long long count = bottom[0]->count();
  LaunchKernel("SigmoidForward", gpu, count, SigmoidForward<Dtype>, count, bottom[0]->gpu_data(gpu),
               top[0]->mutable_gpu_data(gpu));
}

template <typename Dtype>
void SigmoidLayer<Dtype>::Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                                       const BlobVec& bottom) {
  if (!propagate_down[0]) return;
  GpuContext& gpu = this->gpu();
  const long long count = bottom[0]->count();
  LaunchKernel("SigmoidBackward", gpu, count, SigmoidBackward<Dtype>, count, top[0]->gpu_data(gpu),
               top[0]->gpu_diff(gpu), bottom[0]->mutable_gpu_diff(gpu));
}

DOPPIO_INSTANTIATE_LAYER_GPU_FUNCS(SigmoidLayer);

}  // namespace doppio
