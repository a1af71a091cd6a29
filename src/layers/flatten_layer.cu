#include "doppio/core/layer_kernels.cuh"
#include "doppio/layers/flatten_layer.hpp"

namespace doppio {

// Nothing to compute on either device: the top shares the bottom's data and diff.
template <typename Dtype>
void FlattenLayer<Dtype>::Forward_gpu(const BlobVec& bottom, const BlobVec& top) {}

template <typename Dtype>
void FlattenLayer<Dtype>::Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                                       const BlobVec& bottom) {}

DOPPIO_INSTANTIATE_LAYER_GPU_FUNCS(FlattenLayer);

}  // namespace doppio
