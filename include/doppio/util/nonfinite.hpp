#pragma once

#include "doppio/util/host_device.hpp"

namespace doppio {

// The larger of a and b, or the NaN when either is one: the rule of PyTorch's max and of every
// Doppio engine. std::max(a, NaN) drops the NaN (std::max(NaN, b) keeps it), and CUDA's max
// (fmax) drops it either way, so a NaN loss on one engine would be finite on another.
template <typename T>
DOPPIO_HOST_DEVICE inline T MaxKeepingNaN(T a, T b) {
  return a > b || a != a ? a : b;
}

}  // namespace doppio
