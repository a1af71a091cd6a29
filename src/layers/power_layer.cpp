#include "doppio/layers/power_layer.hpp"

#include <cmath>

#include "doppio/core/layer_registry.hpp"
#include "doppio/util/math_functions.hpp"

namespace doppio {

template <typename Dtype>
void PowerLayer<Dtype>::LayerSetUp(const BlobVec& bottom, const BlobVec& top) {
  const PowerParameter& param = this->layer_param_.power_param();
  power_ = param.power();
  scale_ = param.scale();
  shift_ = param.shift();
  diff_scale_ = power_ * scale_;
}

template <typename Dtype>
void PowerLayer<Dtype>::Forward_cpu(const BlobVec& bottom, const BlobVec& top) {
  const int count = bottom[0]->count();
  Dtype* y = top[0]->mutable_cpu_data();
  if (diff_scale_ == Dtype(0)) {
    // power 0 gives 1 everywhere (0^0 included); scale 0 gives shift^power.
    const Dtype value = power_ == Dtype(0) ? Dtype(1) : std::pow(shift_, power_);
    cpu_set(count, value, y);
    return;
  }
  // Only power 1 (a constant gradient) can do without the input in Backward.
  if (power_ != Dtype(1)) this->KeepInputIfInPlace(*bottom[0], *top[0]);
  const Dtype* x = bottom[0]->cpu_data();
  const Dtype scale = scale_, shift = shift_, power = power_;
  if (power == Dtype(1)) {
    for (int i = 0; i < count; ++i) y[i] = shift + scale * x[i];
  } else if (power == Dtype(2)) {
    for (int i = 0; i < count; ++i) {
      const Dtype base = shift + scale * x[i];
      y[i] = base * base;
    }
  } else {
    for (int i = 0; i < count; ++i) y[i] = std::pow(shift + scale * x[i], power);
  }
}

template <typename Dtype>
void PowerLayer<Dtype>::Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                                     const BlobVec& bottom) {
  if (!propagate_down[0]) return;
  const int count = bottom[0]->count();
  const Dtype* dy = top[0]->cpu_diff();
  Dtype* dx = bottom[0]->mutable_cpu_diff();
  const Dtype diff_scale = diff_scale_;
  if (diff_scale == Dtype(0) || power_ == Dtype(1)) {
    for (int i = 0; i < count; ++i) dx[i] = diff_scale * dy[i];
    return;
  }
  const Dtype* x = this->ForwardInput(*bottom[0]);
  const Dtype scale = scale_, shift = shift_, power = power_;
  if (power == Dtype(2)) {
    for (int i = 0; i < count; ++i) dx[i] = dy[i] * diff_scale * (shift + scale * x[i]);
    return;
  }
  // dy/dx = power * scale * base^(power - 1) = diff_scale * y / base, which reuses the output
  // instead of a second pow; at base 0 the quotient is 0/0, so pow gives the limit there.
  const Dtype* y = top[0]->cpu_data();
  for (int i = 0; i < count; ++i) {
    const Dtype base = shift + scale * x[i];
    const Dtype d = base != Dtype(0) ? y[i] / base : std::pow(base, power - Dtype(1));
    dx[i] = dy[i] * diff_scale * d;
  }
}

DOPPIO_INSTANTIATE_CLASS(PowerLayer);
REGISTER_LAYER_CLASS(Power);

}  // namespace doppio
