#include "doppio/core/layer_kernels.cuh"
#include "doppio/layers/parameter_layer.hpp"

namespace doppio {

template <typename Dtype>
void ParameterLayer<Dtype>::Forward_gpu(const BlobVec& bottom, const BlobVec& top) {
  GpuContext& gpu = this->gpu();
  gpu_copy(gpu, top[0]->count(), this->blobs_[0]->gpu_data(gpu), top[0]->mutable_gpu_data(gpu));
}

template <typename Dtype>
void ParameterLayer<Dtype>::Backward_gpu(const BlobVec& top,
                                         const std::vector<bool>& propagate_down,
                                         const BlobVec& bottom) {
  if (!this->param_propagate_down(0)) return;
  GpuContext& gpu = this->gpu();
  gpu_axpy(gpu, top[0]->count(), Dtype(1), top[0]->gpu_diff(gpu),
           this->blobs_[0]->mutable_gpu_diff(gpu));
}

DOPPIO_INSTANTIATE_LAYER_GPU_FUNCS(ParameterLayer);

}  // namespace doppio
