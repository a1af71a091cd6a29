#include "doppio/solvers/lr_policy.hpp"

#include <glog/logging.h>

#include <cmath>
#include <sstream>

namespace doppio {

const std::vector<std::string>& LearningRatePolicies() {
  static const std::vector<std::string> policies = {"fixed",     "step", "exp",    "inv",
                                                    "multistep", "poly", "sigmoid"};
  return policies;
}

namespace {
std::string KnownPolicies() {
  std::ostringstream known;
  for (const auto& policy : LearningRatePolicies()) known << " " << policy;
  return known.str();
}
}  // namespace

void CheckLearningRatePolicy(const SolverParameter& param) {
  const std::string& policy = param.lr_policy();
  DOPPIO_ENSURE(param.has_lr_policy())
      << "solver: lr_policy is not set; one of:" << KnownPolicies();
  bool known = false;
  for (const auto& name : LearningRatePolicies()) known = known || name == policy;
  DOPPIO_ENSURE(known) << "solver: unknown lr_policy '" << policy
                       << "'; known policies:" << KnownPolicies();
  if (policy == "step") {
    DOPPIO_ENSURE(param.stepsize() > 0)
        << "solver: lr_policy 'step' needs stepsize > 0 (stepsize is " << param.stepsize() << ")";
  }
  if (policy == "multistep") {
    for (int i = 1; i < param.stepvalue_size(); ++i) {
      DOPPIO_ENSURE(param.stepvalue(i) > param.stepvalue(i - 1))
          << "solver: lr_policy 'multistep' needs increasing stepvalue entries; stepvalue #" << i
          << " (" << param.stepvalue(i) << ") does not exceed stepvalue #" << i - 1 << " ("
          << param.stepvalue(i - 1) << ")";
    }
  }
  if (policy == "poly") {
    DOPPIO_ENSURE(param.max_iter() > 0)
        << "solver: lr_policy 'poly' needs max_iter > 0 (max_iter is " << param.max_iter() << ")";
  }
  DOPPIO_ENSURE(param.warmup_iter() >= 0)
      << "solver: warmup_iter must be >= 0, not " << param.warmup_iter();
  DOPPIO_ENSURE(param.warmup_start_factor() >= 0)
      << "solver: warmup_start_factor must be >= 0, not " << param.warmup_start_factor();
}

double LearningRate(const SolverParameter& param, int iter, int* current_step) {
  const std::string& policy = param.lr_policy();
  const double base_lr = param.base_lr();
  const double gamma = param.gamma();
  double rate = 0;
  if (policy == "fixed") {
    rate = base_lr;
  } else if (policy == "step") {
    *current_step = iter / param.stepsize();
    rate = base_lr * std::pow(gamma, *current_step);
  } else if (policy == "exp") {
    rate = base_lr * std::pow(gamma, iter);
  } else if (policy == "inv") {
    rate = base_lr * std::pow(1.0 + gamma * iter, -static_cast<double>(param.power()));
  } else if (policy == "multistep") {
    // A loop rather than one step per call, so that a solver restored at a later iteration
    // without its step count still lands on the right step.
    while (*current_step < param.stepvalue_size() && iter >= param.stepvalue(*current_step)) {
      ++*current_step;
      LOG(INFO) << "MultiStep Status: Iteration " << iter << ", step = " << *current_step;
    }
    rate = base_lr * std::pow(gamma, *current_step);
  } else if (policy == "poly") {
    rate = base_lr * std::pow(1.0 - static_cast<double>(iter) / param.max_iter(),
                              static_cast<double>(param.power()));
  } else if (policy == "sigmoid") {
    rate = base_lr / (1.0 + std::exp(-gamma * (static_cast<double>(iter) - param.stepsize())));
  } else {
    CheckLearningRatePolicy(param);  // throws, naming the policy
  }
  if (iter < param.warmup_iter()) {
    const double start = param.warmup_start_factor();
    rate *= start + (1.0 - start) * static_cast<double>(iter) / param.warmup_iter();
  }
  return rate;
}

}  // namespace doppio
