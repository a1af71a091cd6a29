#include "doppio/layers/sigmoid_layer.hpp"

#include <cmath>

#include "doppio/core/layer_registry.hpp"

namespace doppio {

template <typename Dtype>
void SigmoidLayer<Dtype>::Forward_cpu(const BlobVec& bottom, const BlobVec& top) {
  const int count = bottom[0]->count();
  const Dtype* x = bottom[0]->cpu_data();
  Dtype* y = top[0]->mutable_cpu_data();
  // exp(-x) may overflow to inf for very negative x; 1 / (1 + inf) is then the correct 0.
  for (int i = 0; i < count; ++i) y[i] = Dtype(1) / (Dtype(1) + std::exp(-x[i]));
}

template <typename Dtype>
void SigmoidLayer<Dtype>::Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                                       const BlobVec& bottom) {
  if (!propagate_down[0]) return;
  const int count = bottom[0]->count();
  const Dtype* y = top[0]->cpu_data();
  const Dtype* dy = top[0]->cpu_diff();
  Dtype* dx = bottom[0]->mutable_cpu_diff();
  for (int i = 0; i < count; ++i) dx[i] = dy[i] * y[i] * (Dtype(1) - y[i]);
}

DOPPIO_INSTANTIATE_CLASS(SigmoidLayer);
REGISTER_LAYER_CLASS(Sigmoid);

}  // namespace doppio
