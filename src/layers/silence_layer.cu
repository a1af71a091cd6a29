#include "doppio/core/layer_kernels.cuh"
#include "doppio/layers/silence_layer.hpp"
#include "doppio/util/math_functions.hpp"

namespace doppio {

template <typename Dtype>
void SilenceLayer<Dtype>::Forward_gpu(const BlobVec& bottom, const BlobVec& top) {}

template <typename Dtype>
void SilenceLayer<Dtype>::Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                                       const BlobVec& bottom) {
  GpuContext& gpu = this->gpu();
  for (std::size_t i = 0; i < bottom.size(); ++i) {
    if (propagate_down[i]) {
      gpu_set(gpu, bottom[i]->count(), Dtype(0), bottom[i]->mutable_gpu_diff(gpu));
    }
  }
}

DOPPIO_INSTANTIATE_LAYER_GPU_FUNCS(SilenceLayer);

}  // namespace doppio
