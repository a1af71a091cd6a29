#include <cmath>

#include "doppio/solvers/sgd_solvers.hpp"
#include "doppio/solvers/solver_registry.hpp"
#include "doppio/util/math_functions.hpp"

namespace doppio {

template <typename Dtype>
AdamSolver<Dtype>::AdamSolver(const SolverParameter& param, std::shared_ptr<GpuContext> gpu,
                              const CpuOptions& cpu)
    : SGDSolver<Dtype>(param, std::move(gpu), cpu) {
  // Second set: the second moments (the first set holds the first moments).
  this->AddHistorySet();
}

template <typename Dtype>
void AdamSolver<Dtype>::ComputeUpdateValue(int param_id, Dtype rate) {
  auto* blob = this->net_->learnable_params()[param_id];
  const int count = blob->count();
  const Dtype local_rate = rate * this->net_->params_lr()[param_id];
  const Dtype beta1 = this->param_.momentum();
  const Dtype beta2 = this->param_.momentum2();
  const Dtype eps_hat = this->param_.delta();
  const std::size_t num_params = this->net_->learnable_params().size();
  const DeviceMath<Dtype> math = this->math();
  Dtype* m = math.mutable_data(this->history_[param_id].get());
  Dtype* v = math.mutable_data(this->history_[num_params + param_id].get());
  Dtype* update = math.mutable_data(&this->update_);
  Dtype* diff = math.mutable_diff(blob);
  const int t = this->iter_ + 1;
  const Dtype correction =
      std::sqrt(Dtype(1) - std::pow(beta2, t)) / (Dtype(1) - std::pow(beta1, t));
  // m = beta1 * m + (1 - beta1) * g;  v = beta2 * v + (1 - beta2) * g^2
  math.axpby(count, Dtype(1) - beta1, diff, beta1, m);
  math.sqr(count, diff, update);
  math.axpby(count, Dtype(1) - beta2, update, beta2, v);
  // step = local_rate * correction * m / (sqrt(v) + eps_hat)
  math.sqrt(count, v, update);
  math.add_scalar(count, eps_hat, update);
  math.div(count, m, update, update);
  math.scale(count, local_rate * correction, update, diff);
}

DOPPIO_INSTANTIATE_CLASS(AdamSolver);
REGISTER_SOLVER_CLASS(Adam);

}  // namespace doppio
