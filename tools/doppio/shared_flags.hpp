#pragma once

// The flags of some `doppio` commands, not all: each is defined once, in shared_flags.cpp,
// and its description begins with the commands that take it ("time, scale: ..."), which is
// how a command tells its own flags from another's (main.cpp). The flags of every command
// are in common_flags.hpp, a command's own in its file.
#include <gflags/gflags.h>

#include <vector>

#include "doppio/core/common.hpp"

// time, scale
DECLARE_int32(batch);
DECLARE_string(json);
DECLARE_string(input_shape);
DECLARE_string(engine);
// train, scale
DECLARE_string(sync);
DECLARE_double(bucket_mb);
// train, time
DECLARE_string(precision);

namespace doppio {

// --input_shape as C,H,W; empty when the flag is. Error on anything else.
std::vector<int> ImageShapeFromFlag();
// --precision, or `fallback` (a solver's) when the flag is empty. Error on anything else.
Precision PrecisionFromFlag(Precision fallback);

}  // namespace doppio
