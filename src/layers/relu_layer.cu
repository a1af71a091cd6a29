#include "doppio/core/layer_kernels.cuh"
#include "doppio/layers/relu_layer.hpp"

namespace doppio {

namespace {
template <typename Dtype>
__global__ void ReLUForward(long long n, const Dtype* x, Dtype slope, Dtype* y) {
  DOPPIO_KERNEL_LOOP(i, n) { y[i] = ReLUValue(x[i], slope); }
}

template <typename Dtype>
__global__ void ReLUBackward(long long n, const Dtype* x, const Dtype* dy, Dtype slope, Dtype* dx) {
  DOPPIO_KERNEL_LOOP(i, n) { dx[i] = x[i] > Dtype(0) ? dy[i] : slope * dy[i]; }
}
}  // namespace

template <typename Dtype>
void ReLULayer<Dtype>::Forward_gpu(const BlobVec& bottom, const BlobVec& top) {
  // As on the CPU: only a negative slope loses the input's sign in place.
  if (negative_slope_ < 0) this->KeepInputIfInPlace_gpu(*bottom[0], *top[0]);
  GpuContext& gpu = this->gpu();
  const long long count = bottom[0]->count();
  LaunchKernel("ReLUForward", gpu, count, ReLUForward<Dtype>, count, bottom[0]->gpu_data(gpu),
               negative_slope_, top[0]->mutable_gpu_data(gpu));
}

template <typename Dtype>
void ReLULayer<Dtype>::Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                                    const BlobVec& bottom) {
  if (!propagate_down[0]) return;
  GpuContext& gpu = this->gpu();
  const long long count = bottom[0]->count();
  const Dtype* x = this->ForwardInput_gpu(*bottom[0]);
  LaunchKernel("ReLUBackward", gpu, count, ReLUBackward<Dtype>, count, x, top[0]->gpu_diff(gpu),
               negative_slope_, bottom[0]->mutable_gpu_diff(gpu));
}

DOPPIO_INSTANTIATE_LAYER_GPU_FUNCS(ReLULayer);

}  // namespace doppio
