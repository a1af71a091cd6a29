#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "doppio/solvers/solver.hpp"

namespace doppio {

// Maps a solver's type string ("SGD", "Adam", ...) to its constructor. Solvers register
// themselves with REGISTER_SOLVER_CLASS from their own source file.
template <typename Dtype>
class SolverRegistry {
 public:
  using Creator = std::function<std::unique_ptr<Solver<Dtype>>(
      const SolverParameter&, std::shared_ptr<GpuContext>, const CpuOptions&)>;

  static void AddCreator(const std::string& type, Creator creator);
  // Upgrades the legacy solver_type enum, then creates the solver. Throws Error naming the
  // type when it is unknown. With a GPU context the solver runs on that GPU; its nets' layers
  // get `cpu`.
  static std::unique_ptr<Solver<Dtype>> CreateSolver(const SolverParameter& param,
                                                     std::shared_ptr<GpuContext> gpu = nullptr,
                                                     const CpuOptions& cpu = CpuOptions());
  static std::vector<std::string> Types();

 private:
  static std::map<std::string, Creator>& Table();
};

// Moves the legacy solver_type enum into type. Throws Error when both are set and disagree.
void UpgradeSolverType(SolverParameter* param);

// Caffe's rule for snapshot files, applied when a solver file is read to train: without
// snapshot_prefix, snapshots go next to the solver file and take its name; a prefix naming a
// directory puts them in that directory under the solver's name.
void UpgradeSnapshotPrefix(const std::string& solver_file, SolverParameter* param);

template <typename Dtype>
struct SolverRegisterer {
  SolverRegisterer(const std::string& type, typename SolverRegistry<Dtype>::Creator creator) {
    SolverRegistry<Dtype>::AddCreator(type, std::move(creator));
  }
};

}  // namespace doppio

// REGISTER_SOLVER_CLASS(Adam) registers AdamSolver under type "Adam".
#define REGISTER_SOLVER_CLASS(type)                                                          \
  static ::doppio::SolverRegisterer<float> g_solver_##type##_f(                              \
      #type, [](const ::doppio::SolverParameter& p, std::shared_ptr<::doppio::GpuContext> g, \
                const ::doppio::CpuOptions& c) {                                             \
        return std::unique_ptr<::doppio::Solver<float>>(new type##Solver<float>(p, g, c));   \
      });                                                                                    \
  static ::doppio::SolverRegisterer<double> g_solver_##type##_d(                             \
      #type, [](const ::doppio::SolverParameter& p, std::shared_ptr<::doppio::GpuContext> g, \
                const ::doppio::CpuOptions& c) {                                             \
        return std::unique_ptr<::doppio::Solver<double>>(new type##Solver<double>(p, g, c)); \
      })
