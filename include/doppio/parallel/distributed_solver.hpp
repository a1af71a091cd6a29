#pragma once

#include <memory>
#include <string>
#include <vector>

#include "doppio/parallel/agreement.hpp"
#include "doppio/parallel/communicator.hpp"
#include "doppio/parallel/device_timer.hpp"
#include "doppio/parallel/fault_injection.hpp"
#include "doppio/parallel/gradient_sync.hpp"
#include "doppio/parallel/lr_scaling.hpp"
#include "doppio/parallel/rank_config.hpp"
#include "doppio/parallel/rank_reporting.hpp"
#include "doppio/parallel/timeline.hpp"
#include "doppio/solvers/solver.hpp"

namespace doppio {

struct ParallelOptions {
  SyncMode sync = SyncMode::kOverlap;
  double bucket_mb = 25;
  // What each bucket sends (gradient_compression.hpp), from iteration compression_start_iter.
  GradCompression compression;
  int compression_start_iter = 0;
  // Chrome trace of every rank; empty: none.
  std::string timeline_file;
  // base_lr times the number of ranks (the linear scaling rule for the global batch).
  bool scale_lr = false;
  // base_lr for the global batch relative to the solver's reference batch (lr_scaling.hpp);
  // exclusive with scale_lr.
  LrScaling lr_scaling = LrScaling::kNone;
  // > 0: linear learning-rate warm-up over this many iterations, from the one-rank rate
  // when scale_lr, from the reference batch's rate with lr_scaling, else from the solver's
  // warmup_start_factor.
  int lr_warmup_iters = 0;
  // The GPU the solver runs on; null: the CPU.
  std::shared_ptr<GpuContext> gpu;
  // The CPU engines' choices, for the solver's nets.
  CpuOptions cpu;
};

// Data-parallel training on the ranks of a Communicator (docs/design.md, "Data-parallel training").
// Every rank builds the same solver from the same SolverParameter; this class orchestrates:
//  - the parameter is rewritten per rank (ConfigureRank, rank_config.hpp): the net files
//    are read in, every Data and ImageData layer reads shard `rank` of `size` (so
//    batch_size is per rank), test_iter is divided among the ranks, and only rank 0 loads
//    --weights and writes snapshots;
//  - the ranks check that they have the same net, solver and bucket layout (the error
//    names the rank that differs), then rank 0's weights are broadcast and a checksum
//    verified (agreement.hpp);
//  - a GradientSync hooked into backward aggregates the gradients; the test scores are
//    summed over the ranks, the ranks' compute and communication times logged every
//    display interval (rank_reporting.hpp), the ranks agree on stop and snapshot requests,
//    and the timeline is recorded;
//  - with a compression method that keeps state (error-feedback residuals, PowerSGD's Q),
//    the ranks send theirs to rank 0 at the end of each iteration after which rank 0
//    writes a snapshot, and the state goes into the .solverstate (compression_state.hpp).
// On a GPU, forward and backward are timed by events on the compute stream (DeviceTimer),
// resolved once per iteration after the wait for the gradients: the compute times, the
// layers' spans in the timeline and the part of communication hidden behind backward are
// the device's, not the host's queueing of the kernels.
// Every collective happens at the same point on every rank; an error that only one rank
// sees (an unreadable snapshot on rank 0) is sent to the others, so every rank throws.
template <typename Dtype>
class DistributedSolver {
 public:
  // `fault`: a deliberate failure, for tests of the job's failure handling; none by default.
  DistributedSolver(const SolverParameter& param, std::shared_ptr<Communicator> comm,
                    const ParallelOptions& options, FaultInjection fault = FaultInjection());
  ~DistributedSolver();
  DistributedSolver(const DistributedSolver&) = delete;
  DistributedSolver& operator=(const DistributedSolver&) = delete;

  // Resumes from `resume_file` when given (rank 0 reads it; iteration, learning-rate state,
  // history and weights go to every rank), trains to max_iter, writes the timeline.
  void Solve(const std::string& resume_file = "");
  // Restores a snapshot on every rank (rank 0 reads it).
  void Restore(const std::string& resume_file);

  // This rank's local requests (signals); the ranks act on the strongest one together.
  void SetActionFunction(ActionFunction function) { local_action_ = std::move(function); }

  Solver<Dtype>* solver() { return solver_.get(); }
  Communicator& comm() { return *comm_; }
  GradientSync<Dtype>& sync() { return *sync_; }
  const SolverParameter& rank_param() const { return config_.param; }
  const ParallelTotals& totals() const { return totals_; }
  // Per-rank batch (first data layer's first top), as logged.
  int batch_per_rank() const { return batch_; }
  // Hash of the training net's weights (and the test nets'), the same on every rank.
  std::uint64_t WeightsChecksum() const;
  // Broadcasts rank 0's weights to every rank and checks the checksums agree.
  void BroadcastWeights(const std::string& why);

 private:
  void PrepareParameters(const SolverParameter& param);
  void InstallHooks();
  // --lr_scaling, once the per-rank batch is known.
  void ScaleLearningRate();
  // Whether rank 0 writes a snapshot right after the end of the iteration just counted,
  // given whether the ranks agreed on a snapshot request and this rank's action (Solver::Step's
  // and Solve's rules).
  bool SnapshotFollows(bool snapshot_agreed, SolverAction action) const;

  std::shared_ptr<Communicator> comm_;
  ParallelOptions options_;
  FaultInjection fault_;
  RankConfig config_;
  std::unique_ptr<Solver<Dtype>> solver_;
  std::unique_ptr<Timeline> timeline_;
  std::unique_ptr<GradientSync<Dtype>> sync_;
  // GPU only, with several ranks or a timeline.
  std::unique_ptr<DeviceTimer> device_timer_;
  // A layer's span in the timeline between two of device_timer_'s marks, written once the
  // marks are resolved.
  struct DeviceSpan {
    std::string name;
    const char* category;
    int start;
    int end;
  };
  std::vector<DeviceSpan> device_spans_;
  int last_mark_ = 0;
  ActionFunction local_action_;
  ActionAgreement action_agreement_;
  // Rank 0's snapshot schedule (the other ranks' parameters have none).
  int snapshot_interval_ = 0;
  bool snapshot_after_train_ = false;
  int max_iter_ = 0;
  // The compression state gathered for the snapshot at iteration compression_state_iter_.
  CompressionState compression_state_;
  int compression_state_iter_ = -1;
  int batch_ = 0;
  // Timing.
  double iteration_start_ = 0;
  double last_event_ = 0;
  double gradients_ready_ = 0;
  ParallelTotals totals_;
  ParallelTotals at_last_display_;
};

}  // namespace doppio
