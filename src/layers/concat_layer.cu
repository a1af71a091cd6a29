#include "doppio/core/layer_kernels.cuh"
#include "doppio/layers/concat_layer.hpp"

namespace doppio {

template <typename Dtype>
void ConcatLayer<Dtype>::Forward_gpu(const BlobVec& bottom, const BlobVec& top) {
  if (bottom.size() == 1 || top[0]->count() == 0) return;  // one bottom: shared memory
  GpuContext& gpu = this->gpu();
  Dtype* top_data = top[0]->mutable_gpu_data(gpu);
  const int top_axis = top[0]->shape(concat_axis_);
  int offset = 0;
  for (auto* b : bottom) {
    const int axis = b->shape(concat_axis_);
    const int chunk = axis * concat_input_size_;
    if (chunk > 0) {
      const long long n = static_cast<long long>(num_concats_) * chunk;
      LaunchKernel("StridedBlockCopy", gpu, n, StridedBlockCopy<Dtype>, n, chunk, b->gpu_data(gpu),
                   static_cast<long long>(chunk), 0LL, top_data,
                   static_cast<long long>(top_axis) * concat_input_size_,
                   static_cast<long long>(offset) * concat_input_size_);
    }
    offset += axis;
  }
}

template <typename Dtype>
void ConcatLayer<Dtype>::Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                                      const BlobVec& bottom) {
  if (bottom.size() == 1 || top[0]->count() == 0) return;
  GpuContext& gpu = this->gpu();
  const Dtype* top_diff = top[0]->gpu_diff(gpu);
  const int top_axis = top[0]->shape(concat_axis_);
  int offset = 0;
  for (std::size_t i = 0; i < bottom.size(); ++i) {
    const int axis = bottom[i]->shape(concat_axis_);
    const int chunk = axis * concat_input_size_;
    if (propagate_down[i] && chunk > 0) {
      const long long n = static_cast<long long>(num_concats_) * chunk;
      LaunchKernel("StridedBlockCopy", gpu, n, StridedBlockCopy<Dtype>, n, chunk, top_diff,
                   static_cast<long long>(top_axis) * concat_input_size_,
                   static_cast<long long>(offset) * concat_input_size_,
                   bottom[i]->mutable_gpu_diff(gpu), static_cast<long long>(chunk), 0LL);
    }
    offset += axis;
  }
}

DOPPIO_INSTANTIATE_LAYER_GPU_FUNCS(ConcatLayer);

}  // namespace doppio
