// A binary .solverstate, as `doppio train --snapshot` resumes from it: Solver::Restore reads
// it and the weights file it names (found beside it), checks both against the solver, and
// restores the iteration and the method's history; training then goes on for one iteration,
// as `doppio train` would. Two methods with different histories and learning-rate policies:
// SGD with momentum (one blob per parameter, "step") and Adam (two, "multistep", which
// indexes its step values with the restored current_step).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "doppio/solvers/solver.hpp"
#include "doppio/solvers/solver_registry.hpp"
#include "doppio/util/io.hpp"
#include "fuzz_util.hpp"

namespace {

constexpr char kSolver[] = R"(
  base_lr: 0.01 lr_policy: "step" gamma: 0.5 stepsize: 10 max_iter: 100 momentum: 0.9
  display: 0 snapshot_after_train: false random_seed: 1
  net_param {
    name: "fuzz"
    layer { name: "data" type: "DummyData" top: "data" top: "label"
            dummy_data_param { shape { dim: 2 dim: 3 } shape { dim: 2 } } }
    layer { name: "ip" type: "InnerProduct" bottom: "data" top: "ip"
            inner_product_param { num_output: 2 weight_filler { type: "xavier" } } }
    layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip" bottom: "label" top: "loss" }
  })";

// The solvers, and beside the state files the weights they name ("fuzz.caffemodel"; the
// seeds' learned_net).
std::vector<std::unique_ptr<doppio::Solver<float>>>& Solvers() {
  static std::vector<std::unique_ptr<doppio::Solver<float>>> solvers = [] {
    doppio::fuzz::QuietLogging();
    std::vector<std::unique_ptr<doppio::Solver<float>>> made;
    for (const char* type : {"SGD", "Adam"}) {
      doppio::SolverParameter param;
      doppio::ReadProtoFromTextString(kSolver, "fuzz solver", &param);
      param.set_type(type);
      if (param.type() == "Adam") {
        param.set_lr_policy("multistep");
        param.add_stepvalue(10);
        param.add_stepvalue(30);
      }
      made.push_back(doppio::SolverRegistry<float>::CreateSolver(param));
    }
    doppio::NetParameter weights;
    made.front()->net()->ToProto(&weights);
    doppio::WriteProtoToBinaryFile(weights,
                                   (doppio::fuzz::ScratchDir() / "fuzz.caffemodel").string());
    return made;
  }();
  return solvers;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto& solvers = Solvers();
  const std::string path = doppio::fuzz::WriteScratch("fuzz.solverstate", data, size);
  for (auto& solver : solvers) {
    doppio::fuzz::ExpectingErrors([&] {
      solver->Restore(path);
      if (solver->iter() < solver->param().max_iter()) solver->Step(1);
    });
  }
  return 0;
}
