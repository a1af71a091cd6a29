#include "doppio/layers/lstm_unit_layer.hpp"

#include <cmath>

#include "doppio/core/layer_registry.hpp"

namespace doppio {

namespace {
template <typename Dtype>
Dtype Sigmoid(Dtype x) {
  return Dtype(1) / (Dtype(1) + std::exp(-x));
}
}  // namespace

template <typename Dtype>
void LSTMUnitLayer<Dtype>::Reshape(const BlobVec& bottom, const BlobVec& top) {
  const int num = bottom[0]->num_axes() == 3 ? bottom[0]->shape(1) : -1;
  const char* names[] = {"the previous cell state (bottom 0)", "the gate inputs (bottom 1)",
                         "the continuation markers (bottom 2)"};
  for (int i = 0; i < 3; ++i) {
    const Blob<Dtype>& b = *bottom[i];
    const int axes = i == 2 ? 2 : 3;
    DOPPIO_ENSURE(b.num_axes() == axes && b.shape(0) == 1 && b.shape(1) == num)
        << this->Describe() << ": " << names[i] << " has shape " << b.shape_string()
        << "; expected " << axes << " axes (1, N" << (i == 2 ? "" : ", ...")
        << ") with N the second axis of bottom 0";
  }
  hidden_dim_ = bottom[0]->shape(2);
  DOPPIO_ENSURE(bottom[1]->shape(2) == 4 * hidden_dim_)
      << this->Describe() << ": the gate inputs (bottom 1) have " << bottom[1]->shape(2)
      << " values per item; expected 4 x " << hidden_dim_ << " (4 x the cell state's)";
  top[0]->ReshapeLike(*bottom[0]);
  top[1]->ReshapeLike(*bottom[0]);
}

template <typename Dtype>
void LSTMUnitLayer<Dtype>::Forward_cpu(const BlobVec& bottom, const BlobVec& top) {
  const int num = bottom[0]->shape(1);
  const int d_all = hidden_dim_;
  const Dtype* c_prev = bottom[0]->cpu_data();
  const Dtype* x = bottom[1]->cpu_data();
  const Dtype* cont = bottom[2]->cpu_data();
  Dtype* c = top[0]->mutable_cpu_data();
  Dtype* h = top[1]->mutable_cpu_data();
  for (int n = 0; n < num; ++n) {
    const Dtype* gates = x + static_cast<long long>(n) * 4 * d_all;
    for (int d = 0; d < d_all; ++d) {
      const long long k = static_cast<long long>(n) * d_all + d;
      const Dtype i = Sigmoid(gates[d]);
      const Dtype f = cont[n] == Dtype(0) ? Dtype(0) : cont[n] * Sigmoid(gates[d_all + d]);
      const Dtype o = Sigmoid(gates[2 * d_all + d]);
      const Dtype g = std::tanh(gates[3 * d_all + d]);
      c[k] = f * c_prev[k] + i * g;
      h[k] = o * std::tanh(c[k]);
    }
  }
}

template <typename Dtype>
void LSTMUnitLayer<Dtype>::CheckContNotPropagated(const std::vector<bool>& propagate_down) const {
  DOPPIO_ENSURE(!propagate_down[2])
      << this->Describe() << " cannot backpropagate to the continuation markers (bottom 2)";
}

template <typename Dtype>
void LSTMUnitLayer<Dtype>::Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                                        const BlobVec& bottom) {
  CheckContNotPropagated(propagate_down);
  if (!propagate_down[0] && !propagate_down[1]) return;
  const int num = bottom[0]->shape(1);
  const int d_all = hidden_dim_;
  const Dtype* c_prev = bottom[0]->cpu_data();
  const Dtype* x = bottom[1]->cpu_data();
  const Dtype* cont = bottom[2]->cpu_data();
  const Dtype* c = top[0]->cpu_data();
  const Dtype* dc = top[0]->cpu_diff();
  const Dtype* dh = top[1]->cpu_diff();
  // A bottom whose gradient is not asked for may be shared with others: write into scratch.
  c_prev_diff_scratch_.ReshapeLike(*bottom[0]);
  gates_diff_scratch_.ReshapeLike(*bottom[1]);
  Dtype* dc_prev =
      propagate_down[0] ? bottom[0]->mutable_cpu_diff() : c_prev_diff_scratch_.mutable_cpu_diff();
  Dtype* dx =
      propagate_down[1] ? bottom[1]->mutable_cpu_diff() : gates_diff_scratch_.mutable_cpu_diff();
  for (int n = 0; n < num; ++n) {
    const Dtype* gates = x + static_cast<long long>(n) * 4 * d_all;
    Dtype* gates_diff = dx + static_cast<long long>(n) * 4 * d_all;
    for (int d = 0; d < d_all; ++d) {
      const long long k = static_cast<long long>(n) * d_all + d;
      const Dtype i = Sigmoid(gates[d]);
      const Dtype f = cont[n] == Dtype(0) ? Dtype(0) : cont[n] * Sigmoid(gates[d_all + d]);
      const Dtype o = Sigmoid(gates[2 * d_all + d]);
      const Dtype g = std::tanh(gates[3 * d_all + d]);
      const Dtype tanh_c = std::tanh(c[k]);
      const Dtype dc_total = dc[k] + dh[k] * o * (Dtype(1) - tanh_c * tanh_c);
      dc_prev[k] = dc_total * f;
      gates_diff[d] = dc_total * g * i * (Dtype(1) - i);
      gates_diff[d_all + d] = dc_total * c_prev[k] * f * (Dtype(1) - f);
      gates_diff[2 * d_all + d] = dh[k] * tanh_c * o * (Dtype(1) - o);
      gates_diff[3 * d_all + d] = dc_total * i * (Dtype(1) - g * g);
    }
  }
}

DOPPIO_INSTANTIATE_CLASS(LSTMUnitLayer);
REGISTER_LAYER_CLASS(LSTMUnit);

}  // namespace doppio
