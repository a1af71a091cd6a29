#include "doppio/layers/split_layer.hpp"

#include "doppio/core/layer_registry.hpp"
#include "doppio/util/math_functions.hpp"

namespace doppio {

template <typename Dtype>
void SplitLayer<Dtype>::Reshape(const BlobVec& bottom, const BlobVec& top) {
  for (std::size_t i = 0; i < top.size(); ++i) {
    // Each top needs its own diff, so a top cannot be the bottom itself.
    DOPPIO_ENSURE(top[i] != bottom[0])
        << this->Describe() << " cannot work in place (top " << i << " is its bottom)";
    top[i]->ReshapeLike(*bottom[0]);
    top[i]->ShareData(*bottom[0]);
  }
}

template <typename Dtype>
void SplitLayer<Dtype>::Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                                     const BlobVec& bottom) {
  const int count = bottom[0]->count();
  if (!propagate_down[0] || count == 0) return;
  Dtype* bottom_diff = bottom[0]->mutable_cpu_diff();
  if (top.size() == 1) {
    cpu_copy(count, top[0]->cpu_diff(), bottom_diff);
    return;
  }
  cpu_add(count, top[0]->cpu_diff(), top[1]->cpu_diff(), bottom_diff);
  for (std::size_t i = 2; i < top.size(); ++i) {
    cpu_axpy(count, Dtype(1), top[i]->cpu_diff(), bottom_diff);
  }
}

DOPPIO_INSTANTIATE_CLASS(SplitLayer);
REGISTER_LAYER_CLASS(Split);

}  // namespace doppio
