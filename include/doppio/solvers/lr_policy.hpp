#pragma once

#include <string>
#include <vector>

#include "doppio/core/common.hpp"

namespace doppio {

// The learning-rate policies Caffe defines, with base_lr, gamma, power, stepsize, stepvalue
// and max_iter from the SolverParameter:
//   fixed:     base_lr
//   step:      base_lr * gamma ^ floor(iter / stepsize)
//   exp:       base_lr * gamma ^ iter
//   inv:       base_lr * (1 + gamma * iter) ^ (-power)
//   multistep: base_lr * gamma ^ (number of stepvalues reached)
//   poly:      base_lr * (1 - iter / max_iter) ^ power
//   sigmoid:   base_lr / (1 + exp(-gamma * (iter - stepsize)))
// followed by Doppio's linear warm-up: for iter < warmup_iter the rate is multiplied by
// warmup_start_factor + (1 - warmup_start_factor) * iter / warmup_iter.
//
// *current_step is the step count kept in the solver state (step and multistep); multistep
// advances it past every stepvalue <= iter.
double LearningRate(const SolverParameter& param, int iter, int* current_step);

// Throws Error for an unknown policy or a policy whose fields are missing or out of range.
void CheckLearningRatePolicy(const SolverParameter& param);

const std::vector<std::string>& LearningRatePolicies();

}  // namespace doppio
