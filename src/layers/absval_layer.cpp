#include "doppio/layers/absval_layer.hpp"

#include <cmath>

#include "doppio/core/layer_registry.hpp"

namespace doppio {

template <typename Dtype>
void AbsValLayer<Dtype>::Forward_cpu(const BlobVec& bottom, const BlobVec& top) {
  // The output loses the input's sign, which the gradient needs.
  this->KeepInputIfInPlace(*bottom[0], *top[0]);
  const int count = bottom[0]->count();
  const Dtype* x = bottom[0]->cpu_data();
  Dtype* y = top[0]->mutable_cpu_data();
  for (int i = 0; i < count; ++i) y[i] = std::fabs(x[i]);
}

template <typename Dtype>
void AbsValLayer<Dtype>::Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                                      const BlobVec& bottom) {
  if (!propagate_down[0]) return;
  const int count = bottom[0]->count();
  const Dtype* x = this->ForwardInput(*bottom[0]);
  const Dtype* dy = top[0]->cpu_diff();
  Dtype* dx = bottom[0]->mutable_cpu_diff();
  // sign(0) = 0, as Caffe's subgradient.
  for (int i = 0; i < count; ++i) {
    dx[i] = x[i] > Dtype(0) ? dy[i] : (x[i] < Dtype(0) ? -dy[i] : Dtype(0));
  }
}

DOPPIO_INSTANTIATE_CLASS(AbsValLayer);
REGISTER_LAYER_CLASS(AbsVal);

}  // namespace doppio
