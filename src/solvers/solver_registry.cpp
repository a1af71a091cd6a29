#include "doppio/solvers/solver_registry.hpp"

#include <glog/logging.h>

#include <filesystem>
#include <sstream>

namespace doppio {

void UpgradeSolverType(SolverParameter* param) {
  if (!param->has_solver_type()) return;
  std::string type;
  switch (param->solver_type()) {
    case SolverParameter::SGD:
      type = "SGD";
      break;
    case SolverParameter::NESTEROV:
      type = "Nesterov";
      break;
    case SolverParameter::ADAGRAD:
      type = "AdaGrad";
      break;
    case SolverParameter::RMSPROP:
      type = "RMSProp";
      break;
    case SolverParameter::ADADELTA:
      type = "AdaDelta";
      break;
    case SolverParameter::ADAM:
      type = "Adam";
      break;
  }
  DOPPIO_ENSURE(!param->has_type() || param->type() == type)
      << "solver: solver_type " << SolverParameter::SolverType_Name(param->solver_type())
      << " and type '" << param->type() << "' disagree; give only type";
  param->set_type(type);
  param->clear_solver_type();
}

template <typename Dtype>
std::map<std::string, typename SolverRegistry<Dtype>::Creator>& SolverRegistry<Dtype>::Table() {
  static std::map<std::string, Creator> table;
  return table;
}

template <typename Dtype>
void SolverRegistry<Dtype>::AddCreator(const std::string& type, Creator creator) {
  CHECK(Table().count(type) == 0) << "solver type " << type << " registered twice";
  Table()[type] = std::move(creator);
}

template <typename Dtype>
std::vector<std::string> SolverRegistry<Dtype>::Types() {
  std::vector<std::string> types;
  for (const auto& entry : Table()) types.push_back(entry.first);
  return types;
}

template <typename Dtype>
std::unique_ptr<Solver<Dtype>> SolverRegistry<Dtype>::CreateSolver(const SolverParameter& param,
                                                                   std::shared_ptr<GpuContext> gpu,
                                                                   const CpuOptions& cpu) {
  SolverParameter upgraded = param;
  UpgradeSolverType(&upgraded);
  auto it = Table().find(upgraded.type());
  if (it == Table().end()) {
    std::ostringstream known;
    for (const auto& type : Types()) known << " " << type;
    DOPPIO_FAIL() << "solver: unknown solver type '" << upgraded.type()
                  << "'; known types:" << known.str();
  }
  return it->second(upgraded, std::move(gpu), cpu);
}

DOPPIO_INSTANTIATE_CLASS(SolverRegistry);

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

}  // namespace doppio
