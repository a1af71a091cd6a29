#pragma once

#include <string>

namespace doppio {

// How `doppio train --lr_scaling` adapts base_lr to the global batch (per-rank batch x
// iter_size x ranks), relative to the batch the solver was written for (its reference_batch,
// else the training net's per-process batch):
//   linear: base_lr x global / reference (Goyal et al.'s linear scaling rule)
//   sqrt:   base_lr x sqrt(global / reference) (Krizhevsky's rule, for adaptive methods)
//   none:   base_lr as written (the default)
enum class LrScaling { kNone, kLinear, kSqrt };
// Throws Error naming --lr_scaling for an unknown name.
LrScaling ParseLrScaling(const std::string& name);
const char* LrScalingName(LrScaling scaling);
// The factor base_lr is multiplied by; throws Error for a batch that is not positive.
double LrScalingFactor(LrScaling scaling, long long global_batch, long long reference_batch);

}  // namespace doppio
