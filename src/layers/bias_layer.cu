#include "doppio/core/layer_kernels.cuh"
#include "doppio/layers/bias_layer.hpp"
#include "doppio/util/math_functions.hpp"

namespace doppio {

namespace {
template <typename Dtype>
__global__ void AddBias(long long n, int bias_dim, int inner, const Dtype* bias, Dtype* y) {
  DOPPIO_KERNEL_LOOP(i, n) { y[i] += bias[(i / inner) % bias_dim]; }
}
}  // namespace

template <typename Dtype>
void BiasLayer<Dtype>::Forward_gpu(const BlobVec& bottom, const BlobVec& top) {
  GpuContext& gpu = this->gpu();
  const long long count = top[0]->count();
  const Dtype* bias = (bottom.size() > 1 ? bottom[1] : this->blobs_[0].get())->gpu_data(gpu);
  Dtype* y = top[0]->mutable_gpu_data(gpu);
  if (bottom[0] != top[0]) gpu_copy(gpu, bottom[0]->count(), bottom[0]->gpu_data(gpu), y);
  LaunchKernel("AddBias", gpu, count, AddBias<Dtype>, count, bias_dim_, inner_dim_, bias, y);
}

template <typename Dtype>
void BiasLayer<Dtype>::Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                                    const BlobVec& bottom) {
  GpuContext& gpu = this->gpu();
  const Dtype* dy = top[0]->gpu_diff(gpu);
  if (propagate_down[0] && bottom[0] != top[0]) {
    gpu_copy(gpu, bottom[0]->count(), dy, bottom[0]->mutable_gpu_diff(gpu));
  }
  // A learned bias accumulates its gradient; a bias bottom has its diff overwritten.
  const bool learned = bottom.size() == 1;
  if (learned ? !this->param_propagate_down(0) : !propagate_down[1]) return;
  Blob<Dtype>* bias = learned ? this->blobs_[0].get() : bottom[1];
  ChannelSum(gpu, outer_dim_, bias_dim_, inner_dim_, ProductTerm<Dtype>{dy, nullptr},
             learned ? Dtype(1) : Dtype(0), bias->mutable_gpu_diff(gpu));
}

DOPPIO_INSTANTIATE_LAYER_GPU_FUNCS(BiasLayer);

}  // namespace doppio
