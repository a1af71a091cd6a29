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
  Dtype* history = this->history_[param_id]->mutable_cpu_data();
  Dtype* previous = this->update_.data();
  cpu_copy<Dtype>(count, history, previous);
  // history = momentum * history + local_rate * gradient
  cpu_axpby<Dtype>(count, local_rate, blob->cpu_diff(), momentum, history);
  // step = (1 + momentum) * history - momentum * previous history
  Dtype* diff = blob->mutable_cpu_diff();
  cpu_scale<Dtype>(count, Dtype(1) + momentum, history, diff);
  cpu_axpy<Dtype>(count, -momentum, previous, diff);
}

DOPPIO_INSTANTIATE_CLASS(NesterovSolver);
REGISTER_SOLVER_CLASS(Nesterov);

}  // namespace doppio
