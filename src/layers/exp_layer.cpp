#include "doppio/layers/exp_layer.hpp"

#include <cmath>

#include "doppio/core/layer_registry.hpp"

namespace doppio {

template <typename Dtype>
void ExpLayer<Dtype>::LayerSetUp(const BlobVec& bottom, const BlobVec& top) {
  const ExpParameter& param = this->layer_param_.exp_param();
  const double base = param.base();
  DOPPIO_ENSURE(base == -1 || base > 0)
      << this->Describe() << ": exp_param.base must be positive, or -1 for e; got " << base;
  // base^(shift + scale x) = base^shift * exp(ln(base) * scale * x).
  const double log_base = base == -1 ? 1.0 : std::log(base);
  inner_scale_ = static_cast<Dtype>(log_base * param.scale());
  outer_scale_ = static_cast<Dtype>(param.shift() == 0 ? 1.0 : std::exp(log_base * param.shift()));
}

template <typename Dtype>
void ExpLayer<Dtype>::Forward_cpu(const BlobVec& bottom, const BlobVec& top) {
  const int count = bottom[0]->count();
  const Dtype* x = bottom[0]->cpu_data();
  Dtype* y = top[0]->mutable_cpu_data();
  const Dtype inner = inner_scale_, outer = outer_scale_;
  if (inner == Dtype(1) && outer == Dtype(1)) {
    for (int i = 0; i < count; ++i) y[i] = std::exp(x[i]);
  } else {
    for (int i = 0; i < count; ++i) y[i] = outer * std::exp(inner * x[i]);
  }
}

template <typename Dtype>
void ExpLayer<Dtype>::Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                                   const BlobVec& bottom) {
  if (!propagate_down[0]) return;
  const int count = bottom[0]->count();
  const Dtype* y = top[0]->cpu_data();
  const Dtype* dy = top[0]->cpu_diff();
  Dtype* dx = bottom[0]->mutable_cpu_diff();
  const Dtype inner = inner_scale_;
  for (int i = 0; i < count; ++i) dx[i] = dy[i] * y[i] * inner;
}

DOPPIO_INSTANTIATE_CLASS(ExpLayer);
REGISTER_LAYER_CLASS(Exp);

}  // namespace doppio
