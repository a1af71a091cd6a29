#include "doppio/core/layer_kernels.cuh"
#include "doppio/layers/split_layer.hpp"
#include "doppio/util/math_functions.hpp"

namespace doppio {

template <typename Dtype>
void SplitLayer<Dtype>::Forward_gpu(const BlobVec& bottom, const BlobVec& top) {
  // The tops share the bottom's data.
}

template <typename Dtype>
void SplitLayer<Dtype>::Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                                     const BlobVec& bottom) {
  const int count = bottom[0]->count();
  if (!propagate_down[0] || count == 0) return;
  GpuContext& gpu = this->gpu();
  Dtype* bottom_diff = bottom[0]->mutable_gpu_diff(gpu);
  if (top.size() == 1) {
    gpu_copy(gpu, count, top[0]->gpu_diff(gpu), bottom_diff);
    return;
  }
  gpu_add(gpu, count, top[0]->gpu_diff(gpu), top[1]->gpu_diff(gpu), bottom_diff);
  for (std::size_t i = 2; i < top.size(); ++i) {
    gpu_axpy(gpu, count, Dtype(1), top[i]->gpu_diff(gpu), bottom_diff);
  }
}

DOPPIO_INSTANTIATE_LAYER_GPU_FUNCS(SplitLayer);

}  // namespace doppio
