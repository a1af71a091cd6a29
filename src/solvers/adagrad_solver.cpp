#include "doppio/solvers/sgd_solvers.hpp"
#include "doppio/solvers/solver_registry.hpp"
#include "doppio/util/math_functions.hpp"

namespace doppio {

template <typename Dtype>
AdaGradSolver<Dtype>::AdaGradSolver(const SolverParameter& param, std::shared_ptr<GpuContext> gpu,
                                    const CpuOptions& cpu)
    : SGDSolver<Dtype>(param, std::move(gpu), cpu) {
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
  const DeviceMath<Dtype> m = this->math();
  Dtype* history = m.mutable_data(this->history_[param_id].get());
  Dtype* update = m.mutable_data(&this->update_);
  Dtype* diff = m.mutable_diff(blob);
  // history += g^2; step = local_rate * g / (sqrt(history) + delta)
  m.sqr(count, diff, update);
  m.add(count, update, history, history);
  m.sqrt(count, history, update);
  m.add_scalar(count, delta, update);
  m.div(count, diff, update, update);
  m.scale(count, local_rate, update, diff);
}

DOPPIO_INSTANTIATE_CLASS(AdaGradSolver);
REGISTER_SOLVER_CLASS(AdaGrad);

}  // namespace doppio
