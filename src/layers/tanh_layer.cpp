#include "doppio/layers/tanh_layer.hpp"

#include <cmath>

#include "doppio/core/layer_registry.hpp"

namespace doppio {

template <typename Dtype>
void TanHLayer<Dtype>::Forward_cpu(const BlobVec& bottom, const BlobVec& top) {
  const int count = bottom[0]->count();
  const Dtype* x = bottom[0]->cpu_data();
  Dtype* y = top[0]->mutable_cpu_data();
  for (int i = 0; i < count; ++i) y[i] = std::tanh(x[i]);
}

template <typename Dtype>
void TanHLayer<Dtype>::Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                                    const BlobVec& bottom) {
  if (!propagate_down[0]) return;
  const int count = bottom[0]->count();
  const Dtype* y = top[0]->cpu_data();
  const Dtype* dy = top[0]->cpu_diff();
  Dtype* dx = bottom[0]->mutable_cpu_diff();
  for (int i = 0; i < count; ++i) dx[i] = dy[i] * (Dtype(1) - y[i] * y[i]);
}

DOPPIO_INSTANTIATE_CLASS(TanHLayer);
REGISTER_LAYER_CLASS(TanH);

}  // namespace doppio
