#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "doppio/proto/doppio.pb.h"
#include "doppio/util/error.hpp"

namespace doppio {

enum class Mode { CPU, GPU };

// Explicit instantiation for the two floating-point types every kernel supports.
#define DOPPIO_INSTANTIATE_CLASS(classname) \
  template class classname<float>;          \
  template class classname<double>

}  // namespace doppio
