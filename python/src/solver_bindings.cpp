// Solver: pycaffe's solvers, each one the data-parallel trainer `doppio train` runs
// (DistributedSolver), so that a script stepped under `mpirun -np N` trains exactly as
// `mpirun -np N doppio train` does: weights broadcast from rank 0, a shard of the data per
// rank, gradients allreduced during backward, the ranks' agreement on stops and snapshots.
// Without a launcher the job has one rank, and it trains as `doppio train` does alone.
#include <optional>
#include <string>

#include "bindings.hpp"
#include "doppio/parallel/distributed_solver.hpp"
#include "doppio/parallel/gpu_selection.hpp"
#include "doppio/solvers/solver_registry.hpp"
#include "doppio/util/io.hpp"
#include "runtime.hpp"

namespace doppio::python {
namespace {

class PySolver {
 public:
  // `type`: the solver class pycaffe's constructor names ("SGD" for SGDSolver); none for
  // get_solver, which takes the file's.
  PySolver(const std::string& file, const std::optional<std::string>& type) {
    CheckFileExists(file, "the solver prototxt");
    Runtime& runtime = Runtime::Get();
    SolverParameter param = ReadSolverParamsFromTextFile(file);
    UpgradeSnapshotPrefix(file, &param);
    if (type) {
      param.clear_solver_type();
      param.set_type(*type);
    }
    // As in Caffe, the file's random_seed wins over set_random_seed's.
    if (runtime.seed() && !param.has_random_seed()) {
      param.set_random_seed(static_cast<std::int64_t>(*runtime.seed()));
    }
    ParallelOptions options;
    options.gpu = runtime.gpu();
    if (options.gpu) {
      param.set_solver_mode(SolverParameter::GPU);
      param.set_device_id(options.gpu->device());
    } else {
      param.set_solver_mode(SolverParameter::CPU);
    }
    comm_ = runtime.communicator();
    if (options.gpu && comm_->size() > 1) comm_ = MakeGpuCommunicator(comm_, options.gpu);
    trainer_ = std::make_unique<DistributedSolver<float>>(param, comm_, options);
  }

  Solver<float>& solver() { return *trainer_->solver(); }
  DistributedSolver<float>& trainer() { return *trainer_; }
  bool writes_snapshots() const { return comm_->rank() == 0; }

 private:
  std::shared_ptr<Communicator> comm_;
  std::unique_ptr<DistributedSolver<float>> trainer_;
};

}  // namespace

void BindSolver(py::module_& m) {
  using Release = py::call_guard<py::gil_scoped_release>;
  py::class_<PySolver>(m, "Solver")
      .def(py::init<const std::string&, const std::optional<std::string>&>(), py::arg("filename"),
           py::arg("type") = py::none())
      .def_property_readonly("type", [](PySolver& s) { return std::string(s.solver().type()); })
      .def_property_readonly("net", [](PySolver& s) { return s.solver().net(); })
      .def_property_readonly("test_nets", [](PySolver& s) { return s.solver().test_nets(); })
      .def_property_readonly("iter", [](PySolver& s) { return s.solver().iter(); })
      .def_property_readonly(
          "_param_bytes",
          [](PySolver& s) { return py::bytes(s.solver().param().SerializeAsString()); })
      .def(
          "solve",
          [](PySolver& s, const std::optional<std::string>& resume) {
            if (resume) CheckFileExists(*resume, "the solver state");
            py::gil_scoped_release release;
            s.trainer().Solve(resume.value_or(""));
          },
          py::arg("resume") = py::none())
      .def(
          "step", [](PySolver& s, int iters) { s.solver().Step(iters); }, py::arg("iters"),
          Release())
      .def(
          "restore",
          [](PySolver& s, const std::string& file) {
            CheckFileExists(file, "the solver state");
            py::gil_scoped_release release;
            s.trainer().Restore(file);
          },
          py::arg("filename"))
      .def(
          "snapshot",
          [](PySolver& s) {
            if (s.writes_snapshots()) s.solver().Snapshot();
          },
          Release(), "Writes a snapshot now (rank 0 writes it; the other ranks' calls return).")
      .def(
          "apply_update", [](PySolver& s) { return s.solver().ApplyUpdate(); }, Release(),
          "One update from the gradients in the net's diffs; False when a weight became NaN or "
          "infinite. This rank's gradients only: step() is what aggregates them across ranks.")
      .def(
          "share_weights",
          [](PySolver& s, Net<float>& net) { net.ShareTrainedLayersWith(*s.solver().net()); },
          py::arg("net"))
      .def(
          "add_callback",
          [](PySolver& s, std::function<void()> on_start, std::function<void()> on_gradients) {
            SolverCallbacks callbacks;
            callbacks.on_start = std::move(on_start);
            callbacks.on_gradients_ready = std::move(on_gradients);
            s.solver().add_callbacks(std::move(callbacks));
          },
          py::arg("on_start"), py::arg("on_gradients_ready"));
}

}  // namespace doppio::python
