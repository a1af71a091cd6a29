#include "doppio/core/layer_kernels.cuh"
#include "doppio/layers/dummy_data_layer.hpp"

namespace doppio {

// The fillers draw from the layer's own host Rng, so the values are the same in either mode;
// the tops move to the device when a consumer reads them there.
template <typename Dtype>
void DummyDataLayer<Dtype>::Forward_gpu(const BlobVec& bottom, const BlobVec& top) {
  this->Forward_cpu(bottom, top);
}

template <typename Dtype>
void DummyDataLayer<Dtype>::Backward_gpu(const BlobVec& top,
                                         const std::vector<bool>& propagate_down,
                                         const BlobVec& bottom) {}

DOPPIO_INSTANTIATE_LAYER_GPU_FUNCS(DummyDataLayer);

}  // namespace doppio
