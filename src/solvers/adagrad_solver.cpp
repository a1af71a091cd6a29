#include "doppio/solvers/sgd_solvers.hpp"
#include "doppio/solvers/solver_registry.hpp"
#include "doppio/util/math_functions.hpp"

namespace doppio {

template <typename Dtype>
AdaGradSolver<Dtype>::AdaGradSolver(const SolverParameter& param) : SGDSolver<Dtype>(param) {
  DOPPIO_ENSURE(this->param_.momentum() == 0)
      << "solver: type AdaGrad does not use momentum; set momentum: 0 (it is "
      << this->param_.momentum() << ")";
}

template <typename Dtype>
void AdaGradSolver<Dtype>::ComputeUpdateValue(int param_id, Dtype rate) {
  auto* blob = this->net_->learnable_params()[param_id];
  const int count = blob->count();
  const Dtype delta = this->param_.delta();
  const Dtype local_rate = rate * this->net_->params_lr()[param_id];
  Dtype* history = this->history_[param_id]->mutable_cpu_data();
  Dtype* update = this->update_.data();
  Dtype* diff = blob->mutable_cpu_diff();
  // history += g^2; step = local_rate * g / (sqrt(history) + delta)
  cpu_sqr<Dtype>(count, diff, update);
  cpu_add<Dtype>(count, update, history, history);
  cpu_sqrt<Dtype>(count, history, update);
  cpu_add_scalar<Dtype>(count, delta, update);
  cpu_div<Dtype>(count, diff, update, update);
  cpu_scale<Dtype>(count, local_rate, update, diff);
}

DOPPIO_INSTANTIATE_CLASS(AdaGradSolver);
REGISTER_SOLVER_CLASS(AdaGrad);

}  // namespace doppio
