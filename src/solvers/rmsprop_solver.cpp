#include "doppio/solvers/sgd_solvers.hpp"
#include "doppio/solvers/solver_registry.hpp"
#include "doppio/util/math_functions.hpp"

namespace doppio {

template <typename Dtype>
RMSPropSolver<Dtype>::RMSPropSolver(const SolverParameter& param, std::shared_ptr<GpuContext> gpu,
                                    const CpuOptions& cpu)
    : SGDSolver<Dtype>(param, std::move(gpu), cpu) {
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
  const DeviceMath<Dtype> m = this->math();
  Dtype* history = m.mutable_data(this->history_[param_id].get());
  Dtype* update = m.mutable_data(&this->update_);
  Dtype* diff = m.mutable_diff(blob);
  // history = rms_decay * history + (1 - rms_decay) * g^2
  // step = local_rate * g / (sqrt(history) + delta)
  m.sqr(count, diff, update);
  m.axpby(count, Dtype(1) - rms_decay, update, rms_decay, history);
  m.sqrt(count, history, update);
  m.add_scalar(count, delta, update);
  m.div(count, diff, update, update);
  m.scale(count, local_rate, update, diff);
}

DOPPIO_INSTANTIATE_CLASS(RMSPropSolver);
REGISTER_SOLVER_CLASS(RMSProp);

}  // namespace doppio
