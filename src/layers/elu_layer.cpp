#include "doppio/layers/elu_layer.hpp"

#include <cmath>

#include "doppio/core/layer_registry.hpp"

namespace doppio {

template <typename Dtype>
void ELULayer<Dtype>::LayerSetUp(const BlobVec& bottom, const BlobVec& top) {
  alpha_ = this->layer_param_.elu_param().alpha();
}

template <typename Dtype>
void ELULayer<Dtype>::Forward_cpu(const BlobVec& bottom, const BlobVec& top) {
  // For alpha >= 0 the output is positive exactly where the input is, so Backward can read
  // the branch from the output in place; a negative alpha breaks that.
  if (alpha_ < 0) this->KeepInputIfInPlace(*bottom[0], *top[0]);
  const int count = bottom[0]->count();
  const Dtype* x = bottom[0]->cpu_data();
  Dtype* y = top[0]->mutable_cpu_data();
  const Dtype alpha = alpha_;
  for (int i = 0; i < count; ++i) y[i] = x[i] > Dtype(0) ? x[i] : alpha * std::expm1(x[i]);
}

template <typename Dtype>
void ELULayer<Dtype>::Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                                   const BlobVec& bottom) {
  if (!propagate_down[0]) return;
  const int count = bottom[0]->count();
  const Dtype* x = this->ForwardInput(*bottom[0]);
  const Dtype* y = top[0]->cpu_data();
  const Dtype* dy = top[0]->cpu_diff();
  Dtype* dx = bottom[0]->mutable_cpu_diff();
  const Dtype alpha = alpha_;
  // For x <= 0, dy/dx = alpha * exp(x) = y + alpha.
  for (int i = 0; i < count; ++i) dx[i] = x[i] > Dtype(0) ? dy[i] : dy[i] * (y[i] + alpha);
}

DOPPIO_INSTANTIATE_CLASS(ELULayer);
REGISTER_LAYER_CLASS(ELU);

}  // namespace doppio
