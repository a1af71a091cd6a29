#include "doppio/core/layer_kernels.cuh"
#include "doppio/layers/log_layer.hpp"

namespace doppio {

namespace {
template <typename Dtype>
__global__ void LogForward(long long n, const Dtype* x, Dtype scale, Dtype shift, Dtype base_scale,
                           Dtype* y) {
  DOPPIO_KERNEL_LOOP(i, n) { y[i] = base_scale * log(shift + scale * x[i]); }
}

template <typename Dtype>
__global__ void LogBackward(long long n, const Dtype* x, const Dtype* dy, Dtype scale, Dtype shift,
                            Dtype num, Dtype* dx) {
  DOPPIO_KERNEL_LOOP(i, n) { dx[i] = dy[i] * num / (shift + scale * x[i]); }
}
}  // namespace

template <typename Dtype>
void LogLayer<Dtype>::Forward_gpu(const BlobVec& bottom, const BlobVec& top) {
  this->KeepInputIfInPlace_gpu(*bottom[0], *top[0]);
  GpuContext& gpu = this->gpu();
  const long long count = bottom[0]->count();
  LaunchKernel("LogForward", gpu, count, LogForward<Dtype>, count, bottom[0]->gpu_data(gpu), scale_,
               shift_, base_scale_, top[0]->mutable_gpu_data(gpu));
}

template <typename Dtype>
void LogLayer<Dtype>::Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                                   const BlobVec& bottom) {
  if (!propagate_down[0]) return;
  GpuContext& gpu = this->gpu();
  const long long count = bottom[0]->count();
  const Dtype* x = this->ForwardInput_gpu(*bottom[0]);
  LaunchKernel("LogBackward", gpu, count, LogBackward<Dtype>, count, x, top[0]->gpu_diff(gpu),
               scale_, shift_, backward_num_scale_, bottom[0]->mutable_gpu_diff(gpu));
}

DOPPIO_INSTANTIATE_LAYER_GPU_FUNCS(LogLayer);

}  // namespace doppio
