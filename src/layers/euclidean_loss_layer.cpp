#include "doppio/layers/euclidean_loss_layer.hpp"

#include <algorithm>

#include "doppio/core/layer_registry.hpp"
#include "doppio/util/math_functions.hpp"

namespace doppio {

template <typename Dtype>
void EuclideanLossLayer<Dtype>::Reshape(const BlobVec& bottom, const BlobVec& top) {
  LossLayer<Dtype>::Reshape(bottom, top);
  DOPPIO_ENSURE(bottom[0]->count(1) == bottom[1]->count(1))
      << this->Describe() << ": the two inputs must have the same size per sample, got "
      << bottom[0]->shape_string() << " and " << bottom[1]->shape_string();
  diff_.ReshapeLike(*bottom[0]);
}

template <typename Dtype>
void EuclideanLossLayer<Dtype>::Forward_cpu(const BlobVec& bottom, const BlobVec& top) {
  const int count = bottom[0]->count();
  cpu_sub(count, bottom[0]->cpu_data(), bottom[1]->cpu_data(), diff_.mutable_cpu_data());
  const Dtype dot = cpu_dot(count, diff_.cpu_data(), diff_.cpu_data());
  top[0]->mutable_cpu_data()[0] = dot / Dtype(std::max(1, bottom[0]->shape(0))) / Dtype(2);
}

template <typename Dtype>
void EuclideanLossLayer<Dtype>::Backward_cpu(const BlobVec& top,
                                             const std::vector<bool>& propagate_down,
                                             const BlobVec& bottom) {
  for (int i = 0; i < 2; ++i) {
    if (!propagate_down[i]) continue;
    const Dtype sign = i == 0 ? 1 : -1;
    const Dtype alpha = sign * top[0]->cpu_diff()[0] / Dtype(std::max(1, bottom[i]->shape(0)));
    cpu_scale(bottom[i]->count(), alpha, diff_.cpu_data(), bottom[i]->mutable_cpu_diff());
  }
}

DOPPIO_INSTANTIATE_CLASS(EuclideanLossLayer);
REGISTER_LAYER_CLASS(EuclideanLoss);

}  // namespace doppio
