#pragma once

#include <memory>
#include <string>
#include <vector>

#include "doppio/parallel/communicator.hpp"
#include "doppio/parallel/device_timer.hpp"
#include "doppio/parallel/gradient_sync.hpp"
#include "doppio/parallel/timeline.hpp"
#include "doppio/solvers/solver.hpp"

namespace doppio {

// An Error that every rank of the job raised at the same point (a refused start-up, an
// unreadable snapshot): the job can end normally, no rank being left in a collective.
class AgreedError : public Error {
 public:
  explicit AgreedError(const std::string& what) : Error(what) {}
};

// Collective: when `ok` is false on some rank, every rank throws AgreedError with the
// first failed rank's `message` ("rank 2 could not <what>: <message>"). With one rank the
// message is thrown as it is.
void AgreeOnFailure(Communicator& comm, bool ok, const std::string& message,
                    const std::string& what);

struct ParallelOptions {
  SyncMode sync = SyncMode::kOverlap;
  double bucket_mb = 25;
  // Chrome trace of every rank; empty: none.
  std::string timeline_file;
  // base_lr times the number of ranks (the linear scaling rule for the global batch).
  bool scale_lr = false;
  // > 0: linear learning-rate warm-up over this many iterations, from the one-rank rate
  // when scale_lr, else from the solver's warmup_start_factor.
  int lr_warmup_iters = 0;
  // The GPU the solver runs on; null: the CPU.
  std::shared_ptr<GpuContext> gpu;
};

// A deliberate failure for testing the job's failure handling, from the environment:
// DOPPIO_FAIL_RANK=r DOPPIO_FAIL_ITER=k [DOPPIO_FAIL_MODE=error|crash|exit|hang] makes
// rank r fail at the start of iteration k: throw an Error (the default), die of SIGSEGV,
// exit(3) without finalising MPI, or hang forever (for --comm_timeout).
struct FaultInjection {
  int rank = -1;
  int iter = -1;
  std::string mode = "error";
  bool active() const { return rank >= 0; }
  // Throws Error naming the variable for a malformed value.
  static FaultInjection FromEnvironment();
};

// Where the time of the iterations so far went on this rank (seconds, summed).
struct ParallelTotals {
  int iterations = 0;
  double iteration = 0;  // wall time of whole iterations (from one's start to the next's)
  double compute = 0;    // forward and backward
  double wait = 0;       // blocked on communication (exposed)
  double comm = 0;       // communication in progress
  double hidden = 0;     // communication overlapping backward
};

// Data-parallel training on the ranks of a Communicator (docs/design.md, "Data-parallel training").
// Every rank builds the same solver from the same SolverParameter; this class then
//  - rewrites the parameter per rank: the net files are read in, every Data and ImageData
//    layer reads shard `rank` of `size` (so batch_size is per rank), test_iter is divided
//    among the ranks, and only rank 0 loads --weights and writes snapshots;
//  - checks that every rank has the same net, solver and bucket layout (the error names
//    the rank that differs), then broadcasts rank 0's weights and verifies a checksum;
//  - aggregates the gradients with a GradientSync hooked into backward, sums the test
//    scores over the ranks, makes the ranks agree on stop and snapshot requests, logs the
//    ranks' compute and communication times every display interval, and records the
//    timeline.
// On a GPU, forward and backward are timed by events on the compute stream (DeviceTimer),
// resolved once per iteration after the wait for the gradients: the compute times, the
// layers' spans in the timeline and the part of communication hidden behind backward are
// the device's, not the host's queueing of the kernels.
// Every collective happens at the same point on every rank; an error that only one rank
// sees (an unreadable snapshot on rank 0) is sent to the others, so every rank throws.
template <typename Dtype>
class DistributedSolver {
 public:
  DistributedSolver(const SolverParameter& param, std::shared_ptr<Communicator> comm,
                    const ParallelOptions& options,
                    FaultInjection fault = FaultInjection::FromEnvironment());
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
  const SolverParameter& rank_param() const { return rank_param_; }
  const ParallelTotals& totals() const { return totals_; }
  // Per-rank batch (first data layer's first top), as logged.
  int batch_per_rank() const { return batch_; }
  // Hash of the training net's weights (and the test nets'), the same on every rank.
  std::uint64_t WeightsChecksum() const;
  // Broadcasts rank 0's weights to every rank and checks the checksums agree.
  void BroadcastWeights(const std::string& why);

 private:
  void PrepareParameters(const SolverParameter& param);
  void CheckAgreement();
  void InstallHooks();
  SolverAction AgreedAction();
  void ReduceTestScores(int test_net_id, std::vector<double>* means);
  void LogRankTimes();
  void MaybeInjectFault();

  std::shared_ptr<Communicator> comm_;
  ParallelOptions options_;
  FaultInjection fault_;
  SolverParameter rank_param_;
  std::uint64_t net_hash_ = 0;
  std::uint64_t solver_hash_ = 0;
  std::vector<std::string> sharded_layers_;
  std::vector<int> test_iter_total_;
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
  SolverAction deferred_action_ = SolverAction::NONE;
  bool in_iteration_ = false;
  int batch_ = 0;
  // Timing.
  double iteration_start_ = 0;
  double last_event_ = 0;
  double gradients_ready_ = 0;
  ParallelTotals totals_;
  ParallelTotals at_last_display_;
};

}  // namespace doppio
