#pragma once

// Flags shared by several `doppio` commands (train, test, time, device_query).
#include <gflags/gflags.h>

#include <string>
#include <vector>

#include "doppio/core/common.hpp"

DECLARE_string(model);
DECLARE_int32(iterations);
DECLARE_string(phase);
DECLARE_string(gpu);
DECLARE_string(weights);
DECLARE_int32(level);
DECLARE_string(stage);

namespace doppio {

// --phase as a Phase; `fallback` when the flag is empty. Error on any other value.
Phase PhaseFromFlag(Phase fallback);
// --stage split at commas (empty entries dropped).
std::vector<std::string> StagesFromFlag();
// Splits "a,b,c" into its non-empty parts.
std::vector<std::string> SplitCommaList(const std::string& text);
// The device ids named by --gpu ("0,1" or "all"); empty for the CPU. Error when --gpu is
// given in a build without GPU support.
std::vector<int> GpusFromFlag();

}  // namespace doppio
