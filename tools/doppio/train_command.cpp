// doppio train: trains a net from a solver prototxt, from scratch, from trained weights
// (fine-tuning) or from a snapshot. Under an MPI launcher (`mpirun -np N doppio train ...`)
// every rank trains on its own shard of the data and the ranks aggregate their gradients
// (docs/design.md, "Data-parallel training"); without one it is the one-rank case.
#include <gflags/gflags.h>
#include <glog/logging.h>

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "command.hpp"
#include "common_flags.hpp"
#include "doppio/core/activation_sharing.hpp"
#include "doppio/core/precision.hpp"
#include "doppio/parallel/distributed_solver.hpp"
#include "doppio/parallel/gpu_selection.hpp"
#include "doppio/parallel/gradient_compression.hpp"
#include "doppio/parallel/mpi_communicator.hpp"
#include "doppio/parallel/rank_logging.hpp"
#include "doppio/solvers/snapshot_search.hpp"
#include "doppio/solvers/solver_registry.hpp"
#include "doppio/util/io.hpp"
#include "memory_report.hpp"
#include "resume_history.hpp"
#include "shared_flags.hpp"
#include "signal_handler.hpp"
#include "slurm_job.hpp"
#include "tool_faults.hpp"

DEFINE_string(solver, "", "The solver definition (solver prototxt). Required.");
DEFINE_string(snapshot, "",
              "A .solverstate (or .solverstate.h5) to resume training from. Cannot be combined "
              "with --weights.");
DEFINE_string(resume, "",
              "auto: resume from the newest complete snapshot under the solver's "
              "snapshot_prefix, or start from iteration 0 when there is none (a job that "
              "requeues itself); empty: only --snapshot resumes.");
DEFINE_bool(snapshot_prefix_from_job, false,
            "Inside a Slurm job: snapshot_prefix becomes <snapshot_prefix>_job<SLURM_JOB_ID>, "
            "so that every job's snapshots are its own and a requeued job finds its own.");
DEFINE_string(sigint_effect, "stop",
              "What SIGINT and SIGTERM do: stop (snapshot when snapshot_after_train, then "
              "exit), snapshot (write a snapshot and go on) or none.");
DEFINE_string(sighup_effect, "snapshot", "What SIGHUP does: stop, snapshot or none.");
DEFINE_bool(allow_nonfinite, false,
            "Go on training when the loss or the weights become NaN or infinite, and write "
            "snapshots that hold them, instead of stopping with exit status 3.");
DEFINE_string(grad_compression, "none",
              "train: what each gradient bucket sends between MPI ranks: none, fp16 or bf16 "
              "(16 bits on the wire, summed in float), topk:FRACTION (the largest FRACTION of "
              "each bucket, with error feedback; under SGD with momentum, the momentum "
              "correction of Deep Gradient Compression) or powersgd:RANK (rank-RANK PowerSGD of "
              "every weight matrix, with error feedback). Not with --sync=reduce_bcast.");
DEFINE_int32(compression_start_iter, 0,
             "train: iterations sent uncompressed before --grad_compression starts.");
DEFINE_string(gpu_comm, "auto",
              "GPU: how gradients travel between the ranks: auto (NCCL where every rank has a "
              "GPU of its own, else MPI), nccl (NCCL, even for one rank or ranks sharing a GPU, "
              "which NCCL refuses unless each rank has its own NCCL_HOSTID) or mpi.");
DEFINE_double(comm_timeout, 600,
              "Seconds a collective may stall before the job is aborted with the ranks that "
              "did not arrive; 0 waits forever.");
DEFINE_string(timeline, "",
              "Write a Chrome trace (JSON: chrome://tracing, ui.perfetto.dev) of every rank's "
              "layers and communication to this file.");
DEFINE_bool(scale_lr, false, "Multiply base_lr by the number of MPI ranks (global batch).");
DEFINE_string(lr_scaling, "none",
              "Scale base_lr to the global batch (per-rank batch x iter_size x ranks) relative "
              "to the solver's reference_batch (else the net's per-process batch): linear "
              "(x global / reference), sqrt (x its square root) or none.");
DEFINE_int32(lr_warmup_iters, 0,
             "Raise the learning rate linearly over this many iterations (from the one-rank "
             "rate with --scale_lr, from the reference batch's rate with --lr_scaling, else "
             "from the solver's warmup_start_factor).");

namespace doppio {
namespace {

// Reads and checks the flags and the solver file (the same on every rank). With --gpu each
// rank opens the GPU its local rank picks.
SolverParameter TrainingParameters(const Communicator& comm, const std::optional<SlurmJob>& job,
                                   ParallelOptions* options) {
  DOPPIO_ENSURE(!FLAGS_solver.empty()) << "train: --solver is required (the solver prototxt)";
  DOPPIO_ENSURE(FLAGS_snapshot.empty() || FLAGS_weights.empty())
      << "train: give --snapshot to resume training or --weights to fine-tune, not both";
  DOPPIO_ENSURE(FLAGS_resume.empty() || FLAGS_resume == "auto")
      << "train: --resume='" << FLAGS_resume
      << "': give --resume=auto (the newest snapshot), or --snapshot=FILE for a given one";
  DOPPIO_ENSURE(FLAGS_resume.empty() || FLAGS_snapshot.empty())
      << "train: give --resume=auto or --snapshot=" << FLAGS_snapshot << ", not both";
  options->sync = ParseSyncMode(FLAGS_sync);
  options->lr_scaling = ParseLrScaling(FLAGS_lr_scaling);
  DOPPIO_ENSURE(FLAGS_bucket_mb > 0)
      << "train: --bucket_mb must be positive, not " << FLAGS_bucket_mb;
  DOPPIO_ENSURE(FLAGS_comm_timeout >= 0)
      << "train: --comm_timeout must be >= 0 seconds, not " << FLAGS_comm_timeout;
  DOPPIO_ENSURE(FLAGS_lr_warmup_iters >= 0)
      << "train: --lr_warmup_iters must be >= 0, not " << FLAGS_lr_warmup_iters;
  DOPPIO_ENSURE(FLAGS_compression_start_iter >= 0)
      << "train: --compression_start_iter must be >= 0, not " << FLAGS_compression_start_iter;
  options->compression = ParseGradCompression(FLAGS_grad_compression);
  options->compression_start_iter = FLAGS_compression_start_iter;
  options->bucket_mb = FLAGS_bucket_mb;
  options->timeline_file = FLAGS_timeline;
  options->scale_lr = FLAGS_scale_lr;
  options->lr_warmup_iters = FLAGS_lr_warmup_iters;
  SolverParameter solver_param = ReadSolverParamsFromTextFile(FLAGS_solver);
  solver_param.set_precision(PrecisionFromFlag(solver_param.precision()));
  options->gpu =
      GpuFromFlags(LocalRanks{comm.local_rank(), comm.local_size()}, solver_param.precision());
  options->cpu = CpuOptionsFromFlags();
  const std::shared_ptr<GpuContext>& gpu = options->gpu;
  const Precision precision = solver_param.precision();
  CheckPrecisionRuns(precision, gpu.get(),
                     FLAGS_precision.empty() ? FLAGS_solver : "--precision=" + FLAGS_precision);
  if (precision != PRECISION_DEFAULT) {
    LOG(INFO) << "precision " << PrecisionName(precision) << " (docs/precision.md)";
  }
  // Mixed precision sends its gradients in 16 bits, as Horovod's fp16 allreduce does: half the
  // bytes, summed in float. One rank sends nothing, and keeps its fp32 gradients.
  // Each rank decides on an overflow from the summed gradients; under reduce_bcast only rank 0
  // has them.
  DOPPIO_ENSURE(!ScalesLoss(solver_param) || comm.size() == 1 ||
                options->sync != SyncMode::kReduceBroadcast)
      << "train: loss scaling (" << FLAGS_solver << ") is not built for --sync=reduce_bcast "
      << "across ranks: use --sync=overlap or blocking";
  const bool sixteen_bits = precision == BF16 || precision == FP16;
  if (sixteen_bits && comm.size() > 1 && options->sync != SyncMode::kReduceBroadcast &&
      gflags::GetCommandLineFlagInfoOrDie("grad_compression").is_default) {
    options->compression = ParseGradCompression(PrecisionName(precision));
    LOG(INFO) << "precision " << PrecisionName(precision) << ": gradients travel between ranks in "
              << PrecisionName(precision) << " (--grad_compression=none sends them in fp32)";
  }
  UpgradeSnapshotPrefix(FLAGS_solver, &solver_param);
  if (FLAGS_snapshot_prefix_from_job) {
    DOPPIO_ENSURE(job.has_value())
        << "train: --snapshot_prefix_from_job needs a Slurm job (SLURM_JOB_ID is not set); "
           "outside Slurm, set snapshot_prefix in "
        << FLAGS_solver;
    solver_param.set_snapshot_prefix(JobSnapshotPrefix(solver_param.snapshot_prefix(), *job));
    LOG(INFO) << "snapshot_prefix of " << Describe(*job) << ": " << solver_param.snapshot_prefix();
  }
  // Caffe's layer_wise_reduce: false reduces the gradients only after backward, which is
  // --sync=blocking; true (its default) is what overlap and reduce_bcast already do.
  if (solver_param.has_layer_wise_reduce() && !solver_param.layer_wise_reduce()) {
    if (gflags::GetCommandLineFlagInfoOrDie("sync").is_default) {
      options->sync = SyncMode::kBlocking;
      LOG(INFO) << FLAGS_solver << ": layer_wise_reduce: false, gradients are reduced after "
                << "backward (--sync=blocking)";
    } else {
      DOPPIO_ENSURE(options->sync != SyncMode::kOverlap)
          << "train: --sync=overlap contradicts layer_wise_reduce: false in " << FLAGS_solver
          << " (which asks for the reduction after backward: --sync=blocking)";
    }
  }
  solver_param.mutable_train_state()->set_level(FLAGS_level);
  for (const std::string& stage : StagesFromFlag()) {
    solver_param.mutable_train_state()->add_stage(stage);
  }
  if (!gflags::GetCommandLineFlagInfoOrDie("iterations").is_default) {
    DOPPIO_ENSURE(FLAGS_iterations >= 0)
        << "train: --iterations must be >= 0, not " << FLAGS_iterations;
    solver_param.set_max_iter(FLAGS_iterations);
  }
  if (gpu) {
    solver_param.set_solver_mode(SolverParameter::GPU);
    solver_param.set_device_id(gpu->device());
  } else if (solver_param.solver_mode() == SolverParameter::GPU) {
    LOG(INFO) << "solver_mode is GPU, but no --gpu was given: training on the CPU";
    solver_param.set_solver_mode(SolverParameter::CPU);
  }
  // --snapshot restores the weights it names; --weights replaces the solver's own list.
  if (!FLAGS_snapshot.empty()) {
    solver_param.clear_weights();
  } else if (!FLAGS_weights.empty()) {
    solver_param.clear_weights();
    solver_param.add_weights(FLAGS_weights);
  }
  return solver_param;
}

// --resume=auto on rank 0: the newest complete snapshot, or "" to start afresh; each start is
// recorded, and the same start again and again reported as a requeue loop.
std::string NewestSnapshotToResume(const SolverParameter& solver_param,
                                   const std::optional<SlurmJob>& job) {
  const std::string& prefix = solver_param.snapshot_prefix();
  std::vector<std::string> passed_over;
  const std::optional<FoundSnapshot> found = NewestCompleteSnapshot(prefix, &passed_over);
  for (const std::string& reason : passed_over) {
    LOG(WARNING) << "--resume=auto: passing over an incomplete snapshot: " << reason;
  }
  if (found) {
    LOG(INFO) << "--resume=auto: the newest complete snapshot under snapshot_prefix '" << prefix
              << "' is " << found->state_file << " (iteration " << found->iter << ")";
  } else {
    LOG(INFO) << "--resume=auto: no snapshot under snapshot_prefix '" << prefix
              << "' yet: training starts from iteration 0";
  }
  const int iter = found ? found->iter : 0;
  ResumeHistory history(prefix);
  const int in_a_row =
      history.Record(iter, job ? Describe(*job) : "process " + std::to_string(getpid()));
  // Three runs in a row that began here and ended without a newer snapshot.
  if (in_a_row > 3) {
    LOG(WARNING) << "Requeue loop: this is start " << in_a_row << " in a row from iteration "
                 << iter << " (" << history.path() << "): the " << in_a_row - 1
                 << " runs before it ended before writing a newer snapshot. Snapshot more "
                    "often (the solver's snapshot interval), give the job more time before "
                    "its signal, or look at why those runs ended.";
  }
  return found ? found->state_file : "";
}

ExitCode TrainOnRanks(std::shared_ptr<Communicator> comm) {
  const int size = comm->size();
  // Flags and files are read on every rank; a rank that fails stops them all.
  ParallelOptions options;
  SolverParameter solver_param;
  SolverAction sigint_effect = SolverAction::STOP, sighup_effect = SolverAction::SNAPSHOT;
  bool ok = true;
  std::string error;
  ExitCode code = ExitCode::kUserError;
  std::string resume_file = FLAGS_snapshot;
  const std::optional<SlurmJob> job = SlurmJobFromEnvironment();
  try {
    sigint_effect = ParseSolverAction(FLAGS_sigint_effect, "sigint_effect");
    sighup_effect = ParseSolverAction(FLAGS_sighup_effect, "sighup_effect");
    solver_param = TrainingParameters(*comm, job, &options);
    if (comm->rank() == 0) {
      if (job) LOG(INFO) << Describe(*job);
      if (FLAGS_resume == "auto") resume_file = NewestSnapshotToResume(solver_param, job);
    }
  } catch (const Error& caught) {
    ok = false;
    error = caught.what();
    code = caught.code();
  }
  AgreeOnFailure(*comm, ok, error, "start training", code);
  // Only rank 0 sees the snapshots (docs/multi_node.md); the others learn whether to resume.
  if (FLAGS_resume == "auto" && size > 1) comm->BroadcastBytes(&resume_file, 0, "resume file");
  if (!resume_file.empty()) solver_param.clear_weights();
  // Gradients on GPUs travel through NCCL when every rank has its own, else through MPI
  // staged in pinned host memory, unless --gpu_comm says which.
  const GpuCommRequest gpu_comm = ParseGpuCommRequest(FLAGS_gpu_comm, "--gpu_comm");
  DOPPIO_ENSURE(options.gpu || gpu_comm == GpuCommRequest::kAuto)
      << "--gpu_comm=" << FLAGS_gpu_comm << " is about GPUs; give --gpu too";
  if (options.gpu && (size > 1 || gpu_comm == GpuCommRequest::kNccl)) {
    comm = MakeGpuCommunicator(comm, options.gpu, gpu_comm);
  }

  SignalHandler signal_handler(sigint_effect, sighup_effect);
  DistributedSolver<float> trainer(solver_param, comm, options, ToolFaultInjection());
  trainer.SetActionFunction(signal_handler.GetActionFunction());
  trainer.solver()->set_allow_nonfinite(FLAGS_allow_nonfinite);
  // Nothing reads the train net's activation gradients after its Backward (pycaffe's solvers,
  // whose users may, keep them apart).
  ShareDiffMemory(trainer.solver()->net().get());
  if (!resume_file.empty()) LOG(INFO) << "Resuming from " << resume_file;
  LOG(INFO) << "Starting Optimization";
  trainer.Solve(resume_file);
  std::vector<const Net<float>*> nets = {trainer.solver()->net().get()};
  for (const auto& test_net : trainer.solver()->test_nets()) nets.push_back(test_net.get());
  LogMemoryReport(nets, options.gpu.get());
  // A signal stopped training before max_iter: a scheduler should know the job is not done.
  return trainer.solver()->requested_early_exit() ? ExitCode::kInterrupted : ExitCode::kSuccess;
}

int Train() {
  std::shared_ptr<Communicator> comm = MakeJobCommunicator();
  SetUpRankLogging(comm->rank(), comm->size());
  comm->set_timeout(FLAGS_comm_timeout);
  try {
    return static_cast<int>(TrainOnRanks(comm));
  } catch (const AgreedError& error) {
    // Every rank stopped at the same point: end normally, with the error.
    if (comm->size() == 1) throw;
    LOG(ERROR) << error.what();
    return static_cast<int>(error.code());
  } catch (const std::exception& error) {
    if (comm->size() == 1) throw;
    // The other ranks may be waiting in a collective: end the whole job now, with this
    // error's exit code (mpirun passes on the code of MPI_Abort).
    const auto* user_error = dynamic_cast<const Error*>(&error);
    LOG(ERROR) << "rank " << comm->rank() << ": " << (user_error ? "" : "internal error: ")
               << error.what() << " (aborting all " << comm->size() << " ranks)";
    comm->Abort(static_cast<int>(user_error ? user_error->code() : ExitCode::kInternal));
  }
  return static_cast<int>(ExitCode::kInternal);
}

}  // namespace
}  // namespace doppio

DOPPIO_REGISTER_COMMAND(train, "train or fine-tune a model", doppio::Train);
