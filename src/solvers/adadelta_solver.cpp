#include "doppio/solvers/sgd_solvers.hpp"
#include "doppio/solvers/solver_registry.hpp"
#include "doppio/util/math_functions.hpp"

namespace doppio {

template <typename Dtype>
AdaDeltaSolver<Dtype>::AdaDeltaSolver(const SolverParameter& param) : SGDSolver<Dtype>(param) {
  // Second set: the running average of squared steps.
  this->AddHistorySet();
}

template <typename Dtype>
void AdaDeltaSolver<Dtype>::ComputeUpdateValue(int param_id, Dtype rate) {
  auto* blob = this->net_->learnable_params()[param_id];
  const int count = blob->count();
  const Dtype delta = this->param_.delta();
  const Dtype momentum = this->param_.momentum();
  const Dtype local_rate = rate * this->net_->params_lr()[param_id];
  const std::size_t num_params = this->net_->learnable_params().size();
  Dtype* grad_history = this->history_[param_id]->mutable_cpu_data();
  Dtype* step_history = this->history_[num_params + param_id]->mutable_cpu_data();
  Dtype* update = this->update_.data();
  Dtype* temp = this->temp_.data();
  Dtype* diff = blob->mutable_cpu_diff();
  // E[g^2] = momentum * E[g^2] + (1 - momentum) * g^2
  cpu_sqr<Dtype>(count, diff, update);
  cpu_axpby<Dtype>(count, Dtype(1) - momentum, update, momentum, grad_history);
  // step = g * sqrt((E[dx^2] + delta) / (E[g^2] + delta))
  cpu_copy<Dtype>(count, step_history, update);
  cpu_add_scalar<Dtype>(count, delta, update);
  cpu_copy<Dtype>(count, grad_history, temp);
  cpu_add_scalar<Dtype>(count, delta, temp);
  cpu_div<Dtype>(count, update, temp, update);
  cpu_sqrt<Dtype>(count, update, update);
  cpu_mul<Dtype>(count, diff, update, diff);
  // E[dx^2] = momentum * E[dx^2] + (1 - momentum) * step^2, before the learning rate.
  cpu_sqr<Dtype>(count, diff, update);
  cpu_axpby<Dtype>(count, Dtype(1) - momentum, update, momentum, step_history);
  cpu_scal<Dtype>(count, local_rate, diff);
}

DOPPIO_INSTANTIATE_CLASS(AdaDeltaSolver);
REGISTER_SOLVER_CLASS(AdaDelta);

}  // namespace doppio
