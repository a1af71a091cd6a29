#include "doppio/layers/swish_layer.hpp"

#include <cmath>

#include "doppio/core/layer_registry.hpp"

namespace doppio {

template <typename Dtype>
void SwishLayer<Dtype>::LayerSetUp(const BlobVec& bottom, const BlobVec& top) {
  beta_ = this->layer_param_.swish_param().beta();
}

template <typename Dtype>
void SwishLayer<Dtype>::Reshape(const BlobVec& bottom, const BlobVec& top) {
  NeuronLayer<Dtype>::Reshape(bottom, top);
  sigmoid_.ReshapeLike(*bottom[0]);
}

template <typename Dtype>
void SwishLayer<Dtype>::Forward_cpu(const BlobVec& bottom, const BlobVec& top) {
  const int count = bottom[0]->count();
  const Dtype* x = bottom[0]->cpu_data();
  Dtype* s = sigmoid_.mutable_cpu_data();
  Dtype* y = top[0]->mutable_cpu_data();
  for (int i = 0; i < count; ++i) {
    s[i] = Dtype(1) / (Dtype(1) + std::exp(-beta_ * x[i]));
    y[i] = x[i] * s[i];
  }
}

template <typename Dtype>
void SwishLayer<Dtype>::Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                                     const BlobVec& bottom) {
  if (!propagate_down[0]) return;
  const int count = bottom[0]->count();
  const Dtype* y = top[0]->cpu_data();
  const Dtype* s = sigmoid_.cpu_data();
  const Dtype* dy = top[0]->cpu_diff();
  Dtype* dx = bottom[0]->mutable_cpu_diff();
  // d/dx x s(bx) = s + b x s (1 - s) = b y + s (1 - b y).
  for (int i = 0; i < count; ++i) dx[i] = dy[i] * (beta_ * y[i] + s[i] * (Dtype(1) - beta_ * y[i]));
}

DOPPIO_INSTANTIATE_CLASS(SwishLayer);
REGISTER_LAYER_CLASS(Swish);

}  // namespace doppio
