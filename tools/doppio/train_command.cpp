// doppio train: trains a net from a solver prototxt, from scratch, from trained weights
// (fine-tuning) or from a snapshot.
#include <gflags/gflags.h>
#include <glog/logging.h>

#include <filesystem>

#include "command.hpp"
#include "common_flags.hpp"
#include "doppio/solvers/solver_registry.hpp"
#include "doppio/util/io.hpp"
#include "doppio/util/signal_handler.hpp"

DEFINE_string(solver, "", "The solver definition (solver prototxt). Required.");
DEFINE_string(snapshot, "",
              "A .solverstate to resume training from. Cannot be combined with --weights.");
DEFINE_string(sigint_effect, "stop",
              "What SIGINT and SIGTERM do: stop (snapshot when snapshot_after_train, then "
              "exit), snapshot (write a snapshot and go on) or none.");
DEFINE_string(sighup_effect, "snapshot", "What SIGHUP does: stop, snapshot or none.");
DEFINE_bool(allow_nonfinite_loss, false,
            "Go on training when the loss becomes NaN or infinite instead of stopping.");

namespace doppio {
namespace {

// Caffe's rule: without snapshot_prefix, snapshots go next to the solver file and take its
// name; a prefix naming a directory puts them in that directory under the solver's name.
void UpgradeSnapshotPrefix(const std::string& solver_file, SolverParameter* param) {
  const std::filesystem::path solver_path(solver_file);
  if (!param->has_snapshot_prefix()) {
    param->set_snapshot_prefix(std::filesystem::path(solver_path).replace_extension().string());
    LOG(INFO) << "snapshot_prefix was not specified and is set to " << param->snapshot_prefix();
  } else if (std::filesystem::is_directory(param->snapshot_prefix())) {
    param->set_snapshot_prefix(
        (std::filesystem::path(param->snapshot_prefix()) / solver_path.stem()).string());
    LOG(INFO) << "snapshot_prefix is a directory and is replaced by " << param->snapshot_prefix();
  }
}

int Train() {
  DOPPIO_ENSURE(!FLAGS_solver.empty()) << "train: --solver is required (the solver prototxt)";
  DOPPIO_ENSURE(FLAGS_snapshot.empty() || FLAGS_weights.empty())
      << "train: give --snapshot to resume training or --weights to fine-tune, not both";
  const SolverAction sigint_effect = ParseSolverAction(FLAGS_sigint_effect, "sigint_effect");
  const SolverAction sighup_effect = ParseSolverAction(FLAGS_sighup_effect, "sighup_effect");
  std::shared_ptr<GpuContext> gpu = GpuFromFlags();

  SolverParameter solver_param = ReadSolverParamsFromTextFile(FLAGS_solver);
  UpgradeSnapshotPrefix(FLAGS_solver, &solver_param);
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

  SignalHandler signal_handler(sigint_effect, sighup_effect);
  std::unique_ptr<Solver<float>> solver = SolverRegistry<float>::CreateSolver(solver_param, gpu);
  solver->SetActionFunction(signal_handler.GetActionFunction());
  solver->set_allow_nonfinite_loss(FLAGS_allow_nonfinite_loss);
  if (!FLAGS_snapshot.empty()) LOG(INFO) << "Resuming from " << FLAGS_snapshot;
  LOG(INFO) << "Starting Optimization";
  solver->Solve(FLAGS_snapshot);
  return 0;
}

}  // namespace
}  // namespace doppio

DOPPIO_REGISTER_COMMAND(train, "train or fine-tune a model", doppio::Train);
