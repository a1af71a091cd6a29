#include "doppio/layers/bnll_layer.hpp"

#include <cmath>

#include "doppio/core/layer_registry.hpp"

namespace doppio {

template <typename Dtype>
void BNLLLayer<Dtype>::Forward_cpu(const BlobVec& bottom, const BlobVec& top) {
  const int count = bottom[0]->count();
  const Dtype* x = bottom[0]->cpu_data();
  Dtype* y = top[0]->mutable_cpu_data();
  // exp of a positive x may overflow; log(1 + e^x) = x + log(1 + e^-x) keeps the argument
  // non-positive. log1p keeps the tiny values for very negative x.
  for (int i = 0; i < count; ++i) {
    y[i] = x[i] > Dtype(0) ? x[i] + std::log1p(std::exp(-x[i])) : std::log1p(std::exp(x[i]));
  }
}

template <typename Dtype>
void BNLLLayer<Dtype>::Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                                    const BlobVec& bottom) {
  if (!propagate_down[0]) return;
  const int count = bottom[0]->count();
  const Dtype* y = top[0]->cpu_data();
  const Dtype* dy = top[0]->cpu_diff();
  Dtype* dx = bottom[0]->mutable_cpu_diff();
  // dy/dx = sigmoid(x) = 1 - exp(-y), read from the output so that no copy of the input is
  // needed in place; y >= 0, so exp cannot overflow, and expm1 is accurate for tiny y.
  for (int i = 0; i < count; ++i) dx[i] = -dy[i] * std::expm1(-y[i]);
}

DOPPIO_INSTANTIATE_CLASS(BNLLLayer);
REGISTER_LAYER_CLASS(BNLL);

}  // namespace doppio
