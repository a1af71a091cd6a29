#pragma once

// A small least-squares training set-up shared by the solver tests: an Input layer fed by
// the solver's on_start callback with data that depend only on the iteration, so a solver
// restored from a snapshot sees exactly the data an uninterrupted one sees.
#include <cmath>
#include <fstream>
#include <iterator>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "doppio/solvers/solver_registry.hpp"
#include "expect_error.hpp"
#include "test_util.hpp"

namespace doppio {
namespace solver_test {

constexpr int kBatch = 4;
constexpr int kDim = 3;

// data -> ip1 (hidden) -> relu -> ip2 (1) -> EuclideanLoss against targets.
inline std::string LeastSquaresNet(int hidden = 5, const std::string& name = "lsq") {
  std::ostringstream s;
  s << "name: '" << name << "' "
    << "layer { name: 'data' type: 'Input' top: 'x' top: 'y' input_param { shape { dim: " << kBatch
    << " dim: " << kDim << " } shape { dim: " << kBatch << " dim: 1 } } } "
    << "layer { name: 'ip1' type: 'InnerProduct' bottom: 'x' top: 'h' inner_product_param { "
    << "  num_output: " << hidden << " weight_filler { type: 'gaussian' std: 0.5 } "
    << "  bias_filler { type: 'constant' value: 0.1 } } } "
    << "layer { name: 'relu' type: 'ReLU' bottom: 'h' top: 'h' } "
    << "layer { name: 'ip2' type: 'InnerProduct' bottom: 'h' top: 'out' inner_product_param { "
    << "  num_output: 1 weight_filler { type: 'gaussian' std: 0.5 } } } "
    << "layer { name: 'loss' type: 'EuclideanLoss' bottom: 'out' bottom: 'y' top: 'loss' } ";
  return s.str();
}

// A solver over LeastSquaresNet; `extra` adds or overrides SolverParameter fields.
inline SolverParameter LeastSquaresSolver(const std::string& extra, int hidden = 5) {
  SolverParameter param = ParseText<SolverParameter>(
      "base_lr: 0.05 lr_policy: 'fixed' max_iter: 10 display: 0 random_seed: 3 "
      "snapshot_after_train: false net_param { " +
      LeastSquaresNet(hidden) + " }");
  param.MergeFrom(ParseText<SolverParameter>(extra));
  return param;
}

// Fills x and y from the iteration number alone. nan_at makes that iteration's targets NaN.
template <typename Dtype>
void FillIterationData(Net<Dtype>& net, int iter, int nan_at = -1) {
  Dtype* x = net.blob_by_name("x")->mutable_cpu_data();
  Dtype* y = net.blob_by_name("y")->mutable_cpu_data();
  for (int n = 0; n < kBatch; ++n) {
    double target = 0.3;
    for (int d = 0; d < kDim; ++d) {
      const double value = std::sin(1.7 * iter + 2.3 * n + 0.9 * d);
      x[n * kDim + d] = static_cast<Dtype>(value);
      target += (d + 1) * 0.5 * value;
    }
    y[n] = iter == nan_at ? std::numeric_limits<Dtype>::quiet_NaN() : static_cast<Dtype>(target);
  }
}

template <typename Dtype>
std::unique_ptr<Solver<Dtype>> MakeSolver(const SolverParameter& param, int nan_at = -1) {
  auto solver = SolverRegistry<Dtype>::CreateSolver(param);
  Solver<Dtype>* raw = solver.get();
  raw->add_callbacks(
      {[raw, nan_at] { FillIterationData(*raw->net(), raw->iter(), nan_at); }, nullptr});
  return solver;
}

// Every learnable value of the training net, in arena order.
template <typename Dtype>
std::vector<Dtype> Weights(const Solver<Dtype>& solver) {
  std::vector<Dtype> values;
  for (const auto* blob : solver.net()->learnable_params()) {
    values.insert(values.end(), blob->cpu_data(), blob->cpu_data() + blob->count());
  }
  return values;
}

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

inline void WriteFile(const std::string& path, const std::string& contents) {
  std::ofstream out(path, std::ios::binary);
  out << contents;
}

}  // namespace solver_test
}  // namespace doppio
