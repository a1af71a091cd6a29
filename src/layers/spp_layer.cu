#include "doppio/core/layer_kernels.cuh"
#include "doppio/layers/spp_layer.hpp"

namespace doppio {

// The inner Split, Pooling, Flatten and Concat layers run their own kernels.
template <typename Dtype>
void SPPLayer<Dtype>::Forward_gpu(const BlobVec& bottom, const BlobVec& top) {
  RunForward(bottom, top);
}

template <typename Dtype>
void SPPLayer<Dtype>::Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                                   const BlobVec& bottom) {
  RunBackward(top, propagate_down, bottom);
}

DOPPIO_INSTANTIATE_LAYER_GPU_FUNCS(SPPLayer);

}  // namespace doppio
