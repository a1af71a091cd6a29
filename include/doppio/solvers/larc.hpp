#pragma once

#include <vector>

#include "doppio/core/net.hpp"

namespace doppio {

// Layer-wise adaptive rate scaling: LARS (You, Gitman and Ginsburg 2017) and its clipping
// variant LARC, under NVCaffe's SolverParameter names (larc, larc_eta, larc_policy).
//
// For a parameter blob w with gradient g, the trust ratio is
//   local = larc_eta * ||w|| / (||g|| + decay * ||w||)
// where g is the gradient the ranks agreed on (after the allreduce, the mean over iter_size
// and clip_gradients, before weight decay joins it), so that every rank computes the same
// ratio, and decay is weight_decay * decay_mult, the decay the update adds. larc_policy
// "scale" (LARS) multiplies the global rate by local; "clip" (LARC) caps the global rate at
// local, i.e. rate * min(local / rate, 1). lr_mult applies on top, as without LARC. Where
// ||w|| or ||g|| is zero the ratio means nothing (a blob filled with zeros, a layer that got
// no gradient) and the plain rate is used.
//
// Biases and normalisation parameters keep the plain rate unless larc_include_bias_bn: their
// norms say little about the step they tolerate (a bias starts at zero, BatchNorm's scale
// near one). "Bias" here is any parameter blob with one axis, and any blob of a layer whose
// registry traits say normalization (BatchNorm, Scale, Bias).
//
// LARC keeps nothing between iterations: the ratio comes from this iteration's weights and
// gradients alone, so a .solverstate resumes it exactly without new fields.

// Throws Error naming the field: larc_eta <= 0, an unknown larc_policy, or larc with a solver
// type other than SGD and Nesterov (the adaptive methods scale their steps themselves).
void CheckLarcParameters(const SolverParameter& param);

// The rate a parameter takes this iteration, from the global rate, the L2 norms of its
// weights and of its gradient, and its weight decay (weight_decay * decay_mult).
double LarcRate(const SolverParameter& param, double rate, double weight_norm, double gradient_norm,
                double decay);

// For each learnable parameter of `net` (arena order), whether LARC sets its rate: larc is
// on and the blob is not a bias or normalisation parameter, or larc_include_bias_bn.
template <typename Dtype>
std::vector<bool> LarcParams(const SolverParameter& param, const Net<Dtype>& net);

}  // namespace doppio
