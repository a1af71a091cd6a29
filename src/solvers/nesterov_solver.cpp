#include "doppio/solvers/sgd_solvers.hpp"
#include "doppio/solvers/solver_registry.hpp"
#include "doppio/util/math_functions.hpp"

namespace doppio {

template <typename Dtype>
void NesterovSolver<Dtype>::ComputeUpdateValue(int param_id, Dtype rate) {
  auto* blob = this->net_->learnable_params()[param_id];
  const int count = blob->count();
  const Dtype momentum = this->param_.momentum();
  const Dtype local_rate = rate * this->net_->params_lr()[param_id];
  const DeviceMath<Dtype> m = this->math();
  Dtype* history = m.mutable_data(this->history_[param_id].get());
  Dtype* previous = m.mutable_data(&this->update_);
  m.copy(count, history, previous);
  // history = momentum * history + local_rate * gradient
  m.axpby(count, local_rate, m.diff(*blob), momentum, history);
  // step = (1 + momentum) * history - momentum * previous history
  Dtype* diff = m.mutable_diff(blob);
  m.scale(count, Dtype(1) + momentum, history, diff);
  m.axpy(count, -momentum, previous, diff);
}

DOPPIO_INSTANTIATE_CLASS(NesterovSolver);
REGISTER_SOLVER_CLASS(Nesterov);

}  // namespace doppio
