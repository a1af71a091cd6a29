#include "doppio/layers/silence_layer.hpp"

#include "doppio/core/layer_registry.hpp"
#include "doppio/util/math_functions.hpp"

namespace doppio {

template <typename Dtype>
void SilenceLayer<Dtype>::Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                                       const BlobVec& bottom) {
  for (std::size_t i = 0; i < bottom.size(); ++i) {
    if (propagate_down[i]) cpu_set(bottom[i]->count(), Dtype(0), bottom[i]->mutable_cpu_diff());
  }
}

DOPPIO_INSTANTIATE_CLASS(SilenceLayer);
REGISTER_LAYER_CLASS(Silence);

}  // namespace doppio
