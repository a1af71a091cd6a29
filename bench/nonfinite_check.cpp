// The cost of stopping on NaN or infinity: a training iteration on the CPU with the check
// (Net::Update tests the weights it writes, in its one pass over the arena) against the
// solver without it (the same SGD update ending in a plain BLAS axpy, as before the check).
// Also times that last pass alone, both ways, on the net's arena: the whole cost of the check
// is the difference between the two passes. The two solvers take turns, each keeps its best.
//
//   build/bench/bench_nonfinite_check [--nets=lenet:64,cifar10_quick:100,alexnet:4]
//                                     [--iterations=N] [--rounds=5] [--threads=1]
#include <gflags/gflags.h>
#include <glog/logging.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "doppio/solvers/sgd_solvers.hpp"
#include "doppio/solvers/solver_registry.hpp"
#include "doppio/util/io.hpp"
#include "doppio/util/math_functions.hpp"
#include "synthetic_inputs.hpp"

DEFINE_string(nets, "lenet:64,cifar10_quick:100,alexnet:4",
              "net:batch pairs, from models/<net>/train_val.prototxt");
DEFINE_string(models, "models", "The directory holding models/<net>/train_val.prototxt");
DEFINE_int32(iterations, 0, "Timed iterations per run; 0: about one second's worth");
DEFINE_int32(rounds, 5, "Turns each solver gets; the best time counts");
DEFINE_int32(threads, 1, "BLAS threads");

namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// SGD as it was before the check: the same update, ending in an unchecked axpy.
class UncheckedSgd : public doppio::SGDSolver<float> {
 public:
  using SGDSolver::SGDSolver;

 protected:
  bool ApplyUpdate() override {
    const float rate = this->GetLearningRate();
    this->ClipGradients();
    for (int id = 0; id < static_cast<int>(this->net_->learnable_params().size()); ++id) {
      this->Normalize(id);
      this->Regularize(id);
      this->ComputeUpdateValue(id, rate);
    }
    doppio::Net<float>& net = *this->net_;
    doppio::cpu_axpy(static_cast<int>(net.arena_count()), -1.f, net.arena_diff(),
                     net.mutable_arena_data());
    return true;
  }
};

doppio::SolverParameter SolverFor(const std::string& net, int batch) {
  doppio::NetParameter net_param =
      doppio::ReadNetParamsFromTextFile(FLAGS_models + "/" + net + "/train_val.prototxt");
  const std::vector<int> shape = net == "lenet"           ? std::vector<int>{1, 28, 28}
                                 : net == "cifar10_quick" ? std::vector<int>{3, 32, 32}
                                                          : std::vector<int>{};
  doppio::SolverParameter param;
  doppio::ReadProtoFromTextString(
      "type: 'SGD' base_lr: 0.001 momentum: 0.9 weight_decay: 0.0005 lr_policy: 'fixed' "
      "display: 0 random_seed: 1 snapshot_after_train: false max_iter: 1000000",
      "bench", &param);
  *param.mutable_net_param() = doppio::WithSyntheticInputs(net_param, batch, shape);
  return param;
}

// Seconds per iteration over `iterations` steps.
double TimeSteps(doppio::Solver<float>& solver, int iterations) {
  const auto start = Clock::now();
  solver.Step(iterations);
  return Seconds(start) / iterations;
}

// Best seconds of one pass over the arena, checked (Net::Update) or plain (cpu_axpy). The
// diffs are zeroed so that repeated passes leave the weights as they are.
double TimeUpdatePass(doppio::Net<float>& net, bool checked) {
  net.ClearParamDiffs();
  const int passes =
      std::max(3, static_cast<int>(2e8 / std::max<std::size_t>(1, net.arena_count())));
  double best = 1e30;
  for (int round = 0; round < 5; ++round) {
    const auto start = Clock::now();
    for (int i = 0; i < passes; ++i) {
      if (checked) {
        CHECK(net.Update());
      } else {
        doppio::cpu_axpy(static_cast<int>(net.arena_count()), -1.f, net.arena_diff(),
                         net.mutable_arena_data());
      }
    }
    best = std::min(best, Seconds(start) / passes);
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  google::InitGoogleLogging(argv[0]);
  FLAGS_minloglevel = google::WARNING;
  FLAGS_logtostderr = true;
  doppio::SetBlasThreads(FLAGS_threads);

  std::printf("%-14s %5s %10s %13s %15s %8s %12s %12s %10s\n", "net", "batch", "params",
              "checked ms", "unchecked ms", "ratio", "fused pass", "plain pass", "pass diff");
  std::istringstream list(FLAGS_nets);
  for (std::string item; std::getline(list, item, ',');) {
    const std::size_t colon = item.find(':');
    const std::string net = item.substr(0, colon);
    const int batch = colon == std::string::npos ? 0 : std::stoi(item.substr(colon + 1));
    const doppio::SolverParameter param = SolverFor(net, batch);
    auto checked = doppio::SolverRegistry<float>::CreateSolver(param);
    UncheckedSgd unchecked(param);
    // Untimed iterations, which also size the timed runs.
    const double first = TimeSteps(*checked, 2);
    TimeSteps(unchecked, 2);
    const int iterations =
        FLAGS_iterations > 0 ? FLAGS_iterations : std::max(2, static_cast<int>(1.0 / first));
    double best_checked = 1e30, best_unchecked = 1e30;
    for (int round = 0; round < FLAGS_rounds; ++round) {
      // Each goes first in alternate rounds.
      if (round % 2 == 0) {
        best_checked = std::min(best_checked, TimeSteps(*checked, iterations));
        best_unchecked = std::min(best_unchecked, TimeSteps(unchecked, iterations));
      } else {
        best_unchecked = std::min(best_unchecked, TimeSteps(unchecked, iterations));
        best_checked = std::min(best_checked, TimeSteps(*checked, iterations));
      }
    }
    doppio::Net<float>& arena = *unchecked.net();
    const double fused = TimeUpdatePass(arena, true);
    const double plain = TimeUpdatePass(arena, false);
    std::printf("%-14s %5d %10zu %13.2f %15.2f %8.3f %9.3f ms %9.3f ms %9.3f%%\n", net.c_str(),
                batch, arena.arena_count(), 1e3 * best_checked, 1e3 * best_unchecked,
                best_checked / best_unchecked, 1e3 * fused, 1e3 * plain,
                100 * (fused - plain) / best_unchecked);
  }
  std::printf(
      "\nratio: checked / unchecked iteration time (best of %d rounds, alternating).\n"
      "pass diff: (fused pass - plain axpy pass) as a share of the unchecked "
      "iteration: the check's own cost.\n",
      FLAGS_rounds);
  return 0;
}
