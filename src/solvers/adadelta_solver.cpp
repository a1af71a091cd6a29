#include "doppio/solvers/sgd_solvers.hpp"
#include "doppio/solvers/solver_registry.hpp"
#include "doppio/util/math_functions.hpp"

namespace doppio {

template <typename Dtype>
AdaDeltaSolver<Dtype>::AdaDeltaSolver(const SolverParameter& param, std::shared_ptr<GpuContext> gpu,
                                      const CpuOptions& cpu)
    : SGDSolver<Dtype>(param, std::move(gpu), cpu) {
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
  const DeviceMath<Dtype> m = this->math();
  Dtype* grad_history = m.mutable_data(this->history_[param_id].get());
  Dtype* step_history = m.mutable_data(this->history_[num_params + param_id].get());
  Dtype* update = m.mutable_data(&this->update_);
  Dtype* temp = m.mutable_data(&this->temp_);
  Dtype* diff = m.mutable_diff(blob);
  // E[g^2] = momentum * E[g^2] + (1 - momentum) * g^2
  m.sqr(count, diff, update);
  m.axpby(count, Dtype(1) - momentum, update, momentum, grad_history);
  // step = g * sqrt((E[dx^2] + delta) / (E[g^2] + delta))
  m.copy(count, step_history, update);
  m.add_scalar(count, delta, update);
  m.copy(count, grad_history, temp);
  m.add_scalar(count, delta, temp);
  m.div(count, update, temp, update);
  m.sqrt(count, update, update);
  m.mul(count, diff, update, diff);
  // E[dx^2] = momentum * E[dx^2] + (1 - momentum) * step^2, before the learning rate.
  m.sqr(count, diff, update);
  m.axpby(count, Dtype(1) - momentum, update, momentum, step_history);
  m.scal(count, local_rate, diff);
}

DOPPIO_INSTANTIATE_CLASS(AdaDeltaSolver);
REGISTER_SOLVER_CLASS(AdaDelta);

}  // namespace doppio
