#include "doppio/solvers/sgd_solvers.hpp"
#include "doppio/solvers/solver_registry.hpp"
#include "doppio/util/math_functions.hpp"

namespace doppio {

template <typename Dtype>
RMSPropSolver<Dtype>::RMSPropSolver(const SolverParameter& param) : SGDSolver<Dtype>(param) {
  DOPPIO_ENSURE(this->param_.momentum() == 0)
      << "solver: type RMSProp does not use momentum; set momentum: 0 (it is "
      << this->param_.momentum() << ")";
  DOPPIO_ENSURE(this->param_.rms_decay() >= 0 && this->param_.rms_decay() < 1)
      << "solver: rms_decay must be in [0, 1), not " << this->param_.rms_decay();
}

template <typename Dtype>
void RMSPropSolver<Dtype>::ComputeUpdateValue(int param_id, Dtype rate) {
  auto* blob = this->net_->learnable_params()[param_id];
  const int count = blob->count();
  const Dtype delta = this->param_.delta();
  const Dtype rms_decay = this->param_.rms_decay();
  const Dtype local_rate = rate * this->net_->params_lr()[param_id];
  Dtype* history = this->history_[param_id]->mutable_cpu_data();
  Dtype* update = this->update_.data();
  Dtype* diff = blob->mutable_cpu_diff();
  // history = rms_decay * history + (1 - rms_decay) * g^2
  // step = local_rate * g / (sqrt(history) + delta)
  cpu_sqr<Dtype>(count, diff, update);
  cpu_axpby<Dtype>(count, Dtype(1) - rms_decay, update, rms_decay, history);
  cpu_sqrt<Dtype>(count, history, update);
  cpu_add_scalar<Dtype>(count, delta, update);
  cpu_div<Dtype>(count, diff, update, update);
  cpu_scale<Dtype>(count, local_rate, update, diff);
}

DOPPIO_INSTANTIATE_CLASS(RMSPropSolver);
REGISTER_SOLVER_CLASS(RMSProp);

}  // namespace doppio
