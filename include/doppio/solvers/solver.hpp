#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "doppio/core/common.hpp"
#include "doppio/core/input_stats.hpp"
#include "doppio/core/net.hpp"
#include "doppio/solvers/solver_action.hpp"

namespace doppio {

// Hooks a parallel trainer (or a test) attaches to the solver's loop. on_start runs before
// each iteration's forward/backward; on_gradients_ready runs once the iteration's gradients
// are final (after iter_size accumulation), before ApplyUpdate touches them.
struct SolverCallbacks {
  std::function<void()> on_start;
  std::function<void()> on_gradients_ready;
  // Whether this replica applies the update itself; a trainer whose root rank updates and
  // then broadcasts the weights answers false on the other ranks. Unset: apply.
  std::function<bool()> apply_update;
  // Runs after ApplyUpdate (or where it would have run), before the iteration count advances.
  std::function<void()> on_update_applied;
  // Receives test net `test_net_id`'s mean outputs over this replica's test_iter batches,
  // followed by the mean test loss when test_compute_loss, before they are logged; may
  // replace them (a parallel trainer puts in the means over every rank's batches).
  std::function<void(int test_net_id, std::vector<double>* means)> on_test_scores;
  // Adds a trainer's own state to a snapshot's SolverState before it is written.
  std::function<void(SolverState* state)> on_snapshot;
};

// Whether a solver of `param` scales its loss dynamically: loss_scaling DYNAMIC_LOSS_SCALING,
// or DEFAULT under precision FP16.
bool ScalesLoss(const SolverParameter& param);

// A NaN or infinity one replica saw in an iteration (Solver::divergence()).
struct Divergence {
  // "Iteration N (lr = ...): training diverged: ..., the first NaN or infinity is in ...".
  std::string message;
  // Where it was found: a forward output of this replica (so this is where it came from), not
  // only the gradients or weights, which the replicas share after an allreduce.
  bool in_forward = false;
};

// Owns the training net and the test nets and runs the optimisation loop. Subclasses supply
// the update rule (ApplyUpdate) and the state they keep between iterations.
//
// Step: forward/backward iter_size times (gradients accumulate), callbacks, ApplyUpdate,
// then snapshot or stop when asked. Test nets share the training net's weights and are run
// every test_interval iterations. Log lines follow Caffe's wording so log parsers work.
template <typename Dtype>
class Solver {
 public:
  // Builds the nets; throws Error for an inconsistent SolverParameter or unreadable files.
  // With a GPU context the nets and the updates run on that GPU (the caller picks the device;
  // solver_mode and device_id are the tools' business); without one, on the CPU. The nets'
  // layers get `cpu`.
  explicit Solver(const SolverParameter& param, std::shared_ptr<GpuContext> gpu = nullptr,
                  const CpuOptions& cpu = CpuOptions());
  virtual ~Solver() = default;
  Solver(const Solver&) = delete;
  Solver& operator=(const Solver&) = delete;

  // Trains to max_iter (resuming from a .solverstate when given), snapshots after training
  // when snapshot_after_train, runs the final test.
  void Solve(const std::string& resume_file = "");
  // Runs `iters` iterations (fewer when a stop is requested).
  void Step(int iters);
  // Loads a .solverstate and the weights it names. Throws Error, changing nothing, when the
  // file is not a solver state or was written for a different net or solver.
  void Restore(const std::string& state_file);
  // Restore's two halves, for a trainer whose root rank reads the files and sends them on:
  // ReadSnapshot reads a .solverstate and the weights it names (looked for beside the state
  // file when they have moved), throwing Error naming the file; RestoreFrom checks them
  // against this solver's net and method (Error naming the origins) and installs them.
  static void ReadSnapshot(const std::string& state_file, SolverState* state, NetParameter* weights,
                           std::string* weights_file);
  void RestoreFrom(const SolverState& state, const NetParameter& weights,
                   const std::string& state_origin, const std::string& weights_origin);
  // Writes <prefix>_iter_<N>.caffemodel and .solverstate, each atomically (with
  // snapshot_format HDF5: .caffemodel.h5 and .solverstate.h5, util/snapshot_files.hpp).
  void Snapshot();

  const SolverParameter& param() const { return param_; }
  const std::shared_ptr<Net<Dtype>>& net() const { return net_; }
  const std::vector<std::shared_ptr<Net<Dtype>>>& test_nets() const { return test_nets_; }
  const std::shared_ptr<GpuContext>& gpu_context() const { return gpu_; }
  int iter() const { return iter_; }
  int current_step() const { return current_step_; }
  Dtype smoothed_loss() const { return smoothed_loss_; }
  bool requested_early_exit() const { return requested_early_exit_; }

  void add_callbacks(SolverCallbacks callbacks) { callbacks_.push_back(std::move(callbacks)); }
  void SetActionFunction(ActionFunction function) { action_function_ = std::move(function); }
  // Replaces base_lr and the warm-up's start factor, before training: a trainer scaling the
  // rate to its global batch learns that batch only from the built net.
  void SetLearningRate(float base_lr, float warmup_start_factor) {
    param_.set_base_lr(base_lr);
    param_.set_warmup_start_factor(warmup_start_factor);
  }
  // With true, a NaN or infinity in the loss or in the updated weights is logged and training
  // goes on, and snapshots are written whatever they hold, instead of stopping with
  // Error(kDiverged) and refusing to write them.
  void set_allow_nonfinite(bool allow) { allow_nonfinite_ = allow; }

  // A NaN or infinity this replica saw in the iteration that just ended: in its loss, or in the
  // weights the update produced. Step sets it before polling the action function and throws
  // Error(message, kDiverged) after the poll, so that a trainer coordinating several replicas
  // can decide in its per-iteration exchange that they all stop, with one message.
  const std::optional<Divergence>& divergence() const { return divergence_; }

  // Dynamic loss scaling (SolverParameter's loss_scaling, docs/precision.md): whether it is
  // on, and the scale the next iteration's backward starts from.
  bool loss_scaling() const { return loss_scaling_; }
  Dtype loss_scale() const { return loss_scale_; }

  // The file names a snapshot at the current iteration gets.
  std::string SnapshotFilename(const std::string& extension) const;
  // Runs every test net once (test_iter batches each) and logs their mean outputs.
  void TestAll();
  // The mean outputs of the last Test(id), in output order (for tests and tools).
  const std::vector<Dtype>& last_test_scores() const { return last_test_scores_; }

  virtual const char* type() const = 0;

  // Applies one update to the training net's weights from the gradients in its diffs; false
  // when a weight came out NaN or infinite (Net::Update's check). Step calls it; so does a
  // loop that runs forward and backward itself (pycaffe's apply_update).
  virtual bool ApplyUpdate() = 0;

 protected:
  // Adds the method's history (momentum, moments) to a snapshot / reads it back. Restore
  // checks counts and shapes before calling RestoreSolverState.
  virtual void SnapshotSolverState(SolverState* state) const = 0;
  virtual void CheckSolverState(const SolverState& state, const std::string& origin) const = 0;
  virtual void RestoreSolverState(const SolverState& state) = 0;

  // The learning rate at the current iteration (updates current_step_ for multistep/step).
  Dtype GetLearningRate();
  bool display_now() const { return param_.display() && iter_ % param_.display() == 0; }

  SolverParameter param_;
  std::shared_ptr<GpuContext> gpu_;
  CpuOptions cpu_options_;
  std::shared_ptr<Net<Dtype>> net_;
  // The training net's own debug_info; the solver's debug_info adds its display iterations.
  bool net_debug_info_ = false;
  std::vector<std::shared_ptr<Net<Dtype>>> test_nets_;
  int iter_ = 0;
  int current_step_ = 0;

 private:
  void InitTrainNet();
  void InitTestNets();
  void CheckParameters() const;
  // The stream position of every record-reading layer of the train net, in a snapshot and
  // back (a state without them, Caffe's or older, restarts the data with a warning).
  void SnapshotDataPositions(SolverState* state) const;
  void RestoreDataPositions(const SolverState& state, const std::string& state_origin);
  void CheckSnapshotWritePermissions() const;
  void LoadWeights(Net<Dtype>* net, const std::string& files) const;
  void Test(int test_net_id);
  void UpdateSmoothedLoss(Dtype loss, int start_iter, int average_loss);
  void DisplayProgress(int stop_iter);
  SolverAction GetRequestedAction();
  void NoteNonFinite(Dtype loss, bool weights_finite);
  std::string LocateNonFinite(bool* in_forward) const;
  // Under loss scaling, after the iteration's gradients are complete (summed over the ranks,
  // who therefore all decide alike): divides them by the scale and returns true, counting a
  // clean update (the scale doubles after loss_scale_window of them); or, where one of them
  // is NaN or infinite, leaves them, halves the scale and returns false: the update is
  // skipped. An overflow with the scale at loss_scale_min is divergence.
  bool UnscaleGradients();
  void CheckSnapshotIsFinite(const NetParameter& weights, const std::string& weights_file,
                             const SolverState& state, const std::string& state_file) const;

  std::uint64_t seed_ = 0;
  std::vector<Dtype> losses_;
  Dtype smoothed_loss_ = 0;
  std::vector<SolverCallbacks> callbacks_;
  ActionFunction action_function_;
  bool requested_early_exit_ = false;
  // The iteration of the last snapshot written, so that Solve does not write it twice.
  int last_snapshot_iter_ = -1;
  bool allow_nonfinite_ = false;
  std::optional<Divergence> divergence_;
  bool loss_scaling_ = false;
  Dtype loss_scale_ = 1;
  int loss_scale_clean_updates_ = 0;
  std::vector<Dtype> last_test_scores_;
  // Display bookkeeping: rate since the previous display line.
  std::chrono::steady_clock::time_point last_display_time_;
  int last_display_iter_ = 0;
  InputStats last_input_stats_;
};

}  // namespace doppio
