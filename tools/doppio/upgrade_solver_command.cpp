// doppio upgrade_solver: rewrites a solver prototxt that uses Caffe's old solver_type enum
// (and inline nets in the V0/V1 layer formats) in the current form, as Caffe's
// upgrade_solver_proto_text does.
#include <glog/logging.h>

#include "command.hpp"
#include "doppio/solvers/solver_registry.hpp"
#include "doppio/util/io.hpp"
#include "doppio/util/upgrade_net.hpp"

namespace doppio {
namespace {

int UpgradeSolver() {
  const std::vector<std::string>& files = CommandArguments();
  DOPPIO_ENSURE(files.size() == 2)
      << "upgrade_solver: give the old solver and the file to write: doppio upgrade_solver IN "
      << "OUT (" << files.size() << " arguments given)";
  SolverParameter solver;
  ReadProtoFromTextFile(files[0], &solver);
  bool upgraded = solver.has_solver_type();
  UpgradeSolverType(&solver);
  const auto upgrade_net = [&](NetParameter* net, const std::string& field) {
    upgraded = UpgradeNetAsNeeded(files[0] + " (" + field + ")", net) || upgraded;
  };
  if (solver.has_net_param()) upgrade_net(solver.mutable_net_param(), "net_param");
  if (solver.has_train_net_param())
    upgrade_net(solver.mutable_train_net_param(), "train_net_param");
  for (int i = 0; i < solver.test_net_param_size(); ++i) {
    upgrade_net(solver.mutable_test_net_param(i), "test_net_param #" + std::to_string(i));
  }
  LOG(INFO) << files[0]
            << (upgraded ? ": upgraded" : ": already in the current format; written unchanged");
  WriteProtoToTextFile(solver, files[1]);
  LOG(INFO) << "Wrote the upgraded solver to " << files[1];
  return 0;
}

}  // namespace
}  // namespace doppio

DOPPIO_REGISTER_COMMAND_WITH_ARGUMENTS(upgrade_solver,
                                       "rewrite a solver with Caffe's old solver_type (IN OUT)",
                                       doppio::UpgradeSolver);
