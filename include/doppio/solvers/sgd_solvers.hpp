#pragma once

#include <memory>
#include <string>
#include <vector>

#include "doppio/core/device_math.hpp"
#include "doppio/solvers/solver.hpp"

namespace doppio {

// Stochastic gradient descent with momentum, and the base of the adaptive methods. Per
// iteration: learning rate from the policy, clip_gradients (global L2 norm), division by
// iter_size, the rate of each parameter when larc (larc.hpp), L1/L2 weight decay scaled by
// each parameter's decay_mult, the method's update (scaled by each parameter's lr_mult), then
// data -= diff. The update runs where the net does:
// on its GPU when it has one (see Solver), else on the host.
template <typename Dtype>
class SGDSolver : public Solver<Dtype> {
 public:
  explicit SGDSolver(const SolverParameter& param, std::shared_ptr<GpuContext> gpu = nullptr,
                     const CpuOptions& cpu = CpuOptions());
  const char* type() const override { return "SGD"; }
  const std::vector<std::shared_ptr<Blob<Dtype>>>& history() const { return history_; }

 protected:
  bool ApplyUpdate() override;
  void SnapshotSolverState(SolverState* state) const override;
  void CheckSolverState(const SolverState& state, const std::string& origin) const override;
  void RestoreSolverState(const SolverState& state) override;

  // Whether the step is plain momentum SGD over the whole arena, done by OnePassUpdate
  // (solvers/sgd_one_pass.hpp) instead of per parameter; then returns whether the weights
  // stay finite, as Net::Update.
  bool UpdatesInOnePass() const;
  bool OnePassUpdate(Dtype rate);
  void ClipGradients();
  void Normalize(int param_id);
  void Regularize(int param_id);
  // The global rate, or LARC's for this parameter: to be called before Regularize adds the
  // decay to its gradient.
  Dtype ParamRate(int param_id, Dtype rate) const;
  // Turns the (regularised) gradient in diff into the step data -= diff takes.
  virtual void ComputeUpdateValue(int param_id, Dtype rate);
  // Adds another history blob per learnable parameter (second moments and the like).
  void AddHistorySet();

  // history_[k * n + i] is the k-th state blob of learnable parameter i (n parameters), in
  // arena order as the update runs; .solverstate files hold it in Caffe's order.
  std::vector<std::shared_ptr<Blob<Dtype>>> history_;
  // Each set's buffer, shaped like the parameter arena: history_'s blobs are views of it.
  std::vector<std::shared_ptr<SyncedMemory>> history_arenas_;
  // The math and blob access on the side the net runs on.
  DeviceMath<Dtype> math() const { return DeviceMath<Dtype>(this->net_->gpu_context().get()); }

  // For each learnable parameter (arena order), whether LARC sets its rate.
  std::vector<bool> larc_params_;
  // Scratch of the largest parameter's size, on either side.
  Blob<Dtype> temp_;
  Blob<Dtype> update_;
};

// Nesterov's accelerated gradient (Sutskever's formulation, as in Caffe).
template <typename Dtype>
class NesterovSolver : public SGDSolver<Dtype> {
 public:
  explicit NesterovSolver(const SolverParameter& param, std::shared_ptr<GpuContext> gpu = nullptr,
                          const CpuOptions& cpu = CpuOptions())
      : SGDSolver<Dtype>(param, std::move(gpu), cpu) {}
  const char* type() const override { return "Nesterov"; }

 protected:
  void ComputeUpdateValue(int param_id, Dtype rate) override;
};

template <typename Dtype>
class AdaGradSolver : public SGDSolver<Dtype> {
 public:
  explicit AdaGradSolver(const SolverParameter& param, std::shared_ptr<GpuContext> gpu = nullptr,
                         const CpuOptions& cpu = CpuOptions());
  const char* type() const override { return "AdaGrad"; }

 protected:
  void ComputeUpdateValue(int param_id, Dtype rate) override;
};

template <typename Dtype>
class RMSPropSolver : public SGDSolver<Dtype> {
 public:
  explicit RMSPropSolver(const SolverParameter& param, std::shared_ptr<GpuContext> gpu = nullptr,
                         const CpuOptions& cpu = CpuOptions());
  const char* type() const override { return "RMSProp"; }

 protected:
  void ComputeUpdateValue(int param_id, Dtype rate) override;
};

// Zeiler's AdaDelta; momentum is the decay of both running averages.
template <typename Dtype>
class AdaDeltaSolver : public SGDSolver<Dtype> {
 public:
  explicit AdaDeltaSolver(const SolverParameter& param, std::shared_ptr<GpuContext> gpu = nullptr,
                          const CpuOptions& cpu = CpuOptions());
  const char* type() const override { return "AdaDelta"; }

 protected:
  void ComputeUpdateValue(int param_id, Dtype rate) override;
};

// Kingma and Ba's Adam; momentum and momentum2 are beta1 and beta2, delta is epsilon.
template <typename Dtype>
class AdamSolver : public SGDSolver<Dtype> {
 public:
  explicit AdamSolver(const SolverParameter& param, std::shared_ptr<GpuContext> gpu = nullptr,
                      const CpuOptions& cpu = CpuOptions());
  const char* type() const override { return "Adam"; }

 protected:
  void ComputeUpdateValue(int param_id, Dtype rate) override;
};

}  // namespace doppio
