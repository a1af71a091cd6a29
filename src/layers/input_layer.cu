#include "doppio/core/layer_kernels.cuh"
#include "doppio/layers/input_layer.hpp"

namespace doppio {

// Nothing to compute on either device: the tops are filled by the caller.
template <typename Dtype>
void InputLayer<Dtype>::Forward_gpu(const BlobVec& bottom, const BlobVec& top) {}

template <typename Dtype>
void InputLayer<Dtype>::Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                                     const BlobVec& bottom) {}

DOPPIO_INSTANTIATE_LAYER_GPU_FUNCS(InputLayer);

}  // namespace doppio
