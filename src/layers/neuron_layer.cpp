#include "doppio/layers/neuron_layer.hpp"

#include "doppio/util/math_functions.hpp"

namespace doppio {

template <typename Dtype>
void NeuronLayer<Dtype>::Reshape(const BlobVec& bottom, const BlobVec& top) {
  if (top[0] != bottom[0]) top[0]->ReshapeLike(*bottom[0]);
}

template <typename Dtype>
void NeuronLayer<Dtype>::KeepInputIfInPlace(const Blob<Dtype>& bottom, const Blob<Dtype>& top) {
  input_kept_ = (&bottom == &top);
  if (!input_kept_) return;
  // resize keeps the capacity, so steady-state iterations do not allocate.
  input_copy_.resize(bottom.count());
  cpu_copy(bottom.count(), bottom.cpu_data(), input_copy_.data());
}

template <typename Dtype>
const Dtype* NeuronLayer<Dtype>::ForwardInput(const Blob<Dtype>& bottom) const {
  return input_kept_ ? input_copy_.data() : bottom.cpu_data();
}

DOPPIO_INSTANTIATE_CLASS(NeuronLayer);

}  // namespace doppio
