#include "doppio/parallel/lr_scaling.hpp"

#include <cmath>

#include "doppio/util/error.hpp"

namespace doppio {

LrScaling ParseLrScaling(const std::string& name) {
  if (name == "none") return LrScaling::kNone;
  if (name == "linear") return LrScaling::kLinear;
  if (name == "sqrt") return LrScaling::kSqrt;
  DOPPIO_FAIL() << "--lr_scaling must be linear, sqrt or none, not '" << name << "'";
  return LrScaling::kNone;
}

const char* LrScalingName(LrScaling scaling) {
  switch (scaling) {
    case LrScaling::kNone:
      return "none";
    case LrScaling::kLinear:
      return "linear";
    case LrScaling::kSqrt:
      return "sqrt";
  }
  return "?";
}

double LrScalingFactor(LrScaling scaling, long long global_batch, long long reference_batch) {
  DOPPIO_ENSURE(global_batch > 0) << "--lr_scaling: the global batch is " << global_batch
                                  << "; the training net needs a batch to scale for";
  DOPPIO_ENSURE(reference_batch > 0)
      << "--lr_scaling: reference_batch must be positive, not " << reference_batch;
  const double ratio = static_cast<double>(global_batch) / static_cast<double>(reference_batch);
  switch (scaling) {
    case LrScaling::kNone:
      return 1;
    case LrScaling::kLinear:
      return ratio;
    case LrScaling::kSqrt:
      return std::sqrt(ratio);
  }
  return 1;
}

}  // namespace doppio
