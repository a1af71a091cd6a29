#include "doppio/core/layer_kernels.cuh"
#include "doppio/layers/slice_layer.hpp"

namespace doppio {

template <typename Dtype>
void SliceLayer<Dtype>::Forward_gpu(const BlobVec& bottom, const BlobVec& top) {
  if (top.size() == 1 || bottom[0]->count() == 0) return;  // one top: shared memory
  GpuContext& gpu = this->gpu();
  const Dtype* bottom_data = bottom[0]->gpu_data(gpu);
  const int bottom_axis = bottom[0]->shape(slice_axis_);
  int offset = 0;
  for (auto* t : top) {
    const int axis = t->shape(slice_axis_);
    const int chunk = axis * slice_size_;
    if (chunk > 0) {
      const long long n = static_cast<long long>(num_slices_) * chunk;
      LaunchKernel("StridedBlockCopy", gpu, n, StridedBlockCopy<Dtype>, n, chunk, bottom_data,
                   static_cast<long long>(bottom_axis) * slice_size_,
                   static_cast<long long>(offset) * slice_size_, t->mutable_gpu_data(gpu),
                   static_cast<long long>(chunk), 0LL);
    }
    offset += axis;
  }
}

template <typename Dtype>
void SliceLayer<Dtype>::Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                                     const BlobVec& bottom) {
  if (!propagate_down[0] || top.size() == 1 || bottom[0]->count() == 0) return;
  GpuContext& gpu = this->gpu();
  Dtype* bottom_diff = bottom[0]->mutable_gpu_diff(gpu);
  const int bottom_axis = bottom[0]->shape(slice_axis_);
  int offset = 0;
  for (auto* t : top) {
    const int axis = t->shape(slice_axis_);
    const int chunk = axis * slice_size_;
    if (chunk > 0) {
      const long long n = static_cast<long long>(num_slices_) * chunk;
      LaunchKernel("StridedBlockCopy", gpu, n, StridedBlockCopy<Dtype>, n, chunk, t->gpu_diff(gpu),
                   static_cast<long long>(chunk), 0LL, bottom_diff,
                   static_cast<long long>(bottom_axis) * slice_size_,
                   static_cast<long long>(offset) * slice_size_);
    }
    offset += axis;
  }
}

DOPPIO_INSTANTIATE_LAYER_GPU_FUNCS(SliceLayer);

}  // namespace doppio
