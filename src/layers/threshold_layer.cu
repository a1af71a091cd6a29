#include "doppio/core/layer_kernels.cuh"
#include "doppio/layers/threshold_layer.hpp"

namespace doppio {

namespace {
template <typename Dtype>
__global__ void ThresholdForward(long long n, const Dtype* x, Dtype threshold, Dtype* y) {
  DOPPIO_KERNEL_LOOP(i, n) { y[i] = x[i] > threshold ? Dtype(1) : Dtype(0); }
}
}  // namespace

template <typename Dtype>
void ThresholdLayer<Dtype>::Forward_gpu(const BlobVec& bottom, const BlobVec& top) {
  GpuContext& gpu = this->gpu();
  const long long count = bottom[0]->count();
  LaunchKernel("ThresholdForward", gpu, count, ThresholdForward<Dtype>, count,
               bottom[0]->gpu_data(gpu), threshold_, top[0]->mutable_gpu_data(gpu));
}

template <typename Dtype>
void ThresholdLayer<Dtype>::Backward_gpu(const BlobVec& top,
                                         const std::vector<bool>& propagate_down,
                                         const BlobVec& bottom) {
  // No gradient: the same check as on the CPU.
  this->Backward_cpu(top, propagate_down, bottom);
}

DOPPIO_INSTANTIATE_LAYER_GPU_FUNCS(ThresholdLayer);

}  // namespace doppio
