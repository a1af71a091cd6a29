#include <algorithm>

#include "doppio/core/layer_kernels.cuh"
#include "doppio/layers/euclidean_loss_layer.hpp"
#include "doppio/util/math_functions.hpp"

namespace doppio {

template <typename Dtype>
void EuclideanLossLayer<Dtype>::Forward_gpu(const BlobVec& bottom, const BlobVec& top) {
  GpuContext& gpu = this->gpu();
  const int count = bottom[0]->count();
  gpu_sub(gpu, count, bottom[0]->gpu_data(gpu), bottom[1]->gpu_data(gpu),
          diff_.mutable_gpu_data(gpu));
  const Dtype dot = gpu_dot(gpu, count, diff_.gpu_data(gpu), diff_.gpu_data(gpu));
  top[0]->mutable_cpu_data()[0] = dot / Dtype(std::max(1, bottom[0]->shape(0))) / Dtype(2);
}

template <typename Dtype>
void EuclideanLossLayer<Dtype>::Backward_gpu(const BlobVec& top,
                                             const std::vector<bool>& propagate_down,
                                             const BlobVec& bottom) {
  GpuContext& gpu = this->gpu();
  for (int i = 0; i < 2; ++i) {
    if (!propagate_down[i]) continue;
    const Dtype sign = i == 0 ? 1 : -1;
    const Dtype alpha = sign * top[0]->cpu_diff()[0] / Dtype(std::max(1, bottom[i]->shape(0)));
    gpu_scale(gpu, bottom[i]->count(), alpha, diff_.gpu_data(gpu),
              bottom[i]->mutable_gpu_diff(gpu));
  }
}

DOPPIO_INSTANTIATE_LAYER_GPU_FUNCS(EuclideanLossLayer);

}  // namespace doppio
