#include "doppio/core/layer_kernels.cuh"
#include "doppio/layers/clip_layer.hpp"

namespace doppio {

namespace {
template <typename Dtype>
__global__ void ClipForward(long long n, const Dtype* x, Dtype low, Dtype high, Dtype* y) {
  DOPPIO_KERNEL_LOOP(i, n) { y[i] = x[i] < low ? low : (x[i] > high ? high : x[i]); }
}

template <typename Dtype>
__global__ void ClipBackward(long long n, const Dtype* x, const Dtype* dy, Dtype low, Dtype high,
                             Dtype* dx) {
  DOPPIO_KERNEL_LOOP(i, n) { dx[i] = x[i] >= low && x[i] <= high ? dy[i] : Dtype(0); }
}
}  // namespace

template <typename Dtype>
void ClipLayer<Dtype>::Forward_gpu(const BlobVec& bottom, const BlobVec& top) {
  this->KeepInputIfInPlace_gpu(*bottom[0], *top[0]);
  GpuContext& gpu = this->gpu();
  const long long count = bottom[0]->count();
  LaunchKernel("ClipForward", gpu, count, ClipForward<Dtype>, count, bottom[0]->gpu_data(gpu), min_,
               max_, top[0]->mutable_gpu_data(gpu));
}

template <typename Dtype>
void ClipLayer<Dtype>::Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                                    const BlobVec& bottom) {
  if (!propagate_down[0]) return;
  GpuContext& gpu = this->gpu();
  const long long count = bottom[0]->count();
  const Dtype* x = this->ForwardInput_gpu(*bottom[0]);
  LaunchKernel("ClipBackward", gpu, count, ClipBackward<Dtype>, count, x, top[0]->gpu_diff(gpu),
               min_, max_, bottom[0]->mutable_gpu_diff(gpu));
}

DOPPIO_INSTANTIATE_LAYER_GPU_FUNCS(ClipLayer);

}  // namespace doppio
