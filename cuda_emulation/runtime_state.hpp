#pragma once

// State shared by the emulated runtime's parts: the last error of the calling thread and
// the streams and events that exist.
#include "cuda_runtime.h"

namespace doppio_emulation {

void SetLastError(cudaError_t error);
// nullptr (the default stream) or a stream created and not yet destroyed.
bool IsValidStream(cudaStream_t stream);

}  // namespace doppio_emulation
