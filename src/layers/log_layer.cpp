#include "doppio/layers/log_layer.hpp"

#include <cmath>

#include "doppio/core/layer_registry.hpp"

namespace doppio {

template <typename Dtype>
void LogLayer<Dtype>::LayerSetUp(const BlobVec& bottom, const BlobVec& top) {
  const LogParameter& param = this->layer_param_.log_param();
  const double base = param.base();
  DOPPIO_ENSURE(base == -1 || (base > 0 && base != 1))
      << this->Describe() << ": log_param.base must be positive and not 1, or -1 for e; got "
      << base;
  const double base_scale = base == -1 ? 1.0 : 1.0 / std::log(base);
  scale_ = param.scale();
  shift_ = param.shift();
  base_scale_ = static_cast<Dtype>(base_scale);
  backward_num_scale_ = static_cast<Dtype>(param.scale() * base_scale);
}

template <typename Dtype>
void LogLayer<Dtype>::Forward_cpu(const BlobVec& bottom, const BlobVec& top) {
  this->KeepInputIfInPlace(*bottom[0], *top[0]);
  const int count = bottom[0]->count();
  const Dtype* x = bottom[0]->cpu_data();
  Dtype* y = top[0]->mutable_cpu_data();
  const Dtype scale = scale_, shift = shift_, base_scale = base_scale_;
  if (scale == Dtype(1) && shift == Dtype(0) && base_scale == Dtype(1)) {
    for (int i = 0; i < count; ++i) y[i] = std::log(x[i]);
  } else {
    for (int i = 0; i < count; ++i) y[i] = base_scale * std::log(shift + scale * x[i]);
  }
}

template <typename Dtype>
void LogLayer<Dtype>::Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                                   const BlobVec& bottom) {
  if (!propagate_down[0]) return;
  const int count = bottom[0]->count();
  const Dtype* x = this->ForwardInput(*bottom[0]);
  const Dtype* dy = top[0]->cpu_diff();
  Dtype* dx = bottom[0]->mutable_cpu_diff();
  const Dtype scale = scale_, shift = shift_, num = backward_num_scale_;
  for (int i = 0; i < count; ++i) dx[i] = dy[i] * num / (shift + scale * x[i]);
}

DOPPIO_INSTANTIATE_CLASS(LogLayer);
REGISTER_LAYER_CLASS(Log);

}  // namespace doppio
