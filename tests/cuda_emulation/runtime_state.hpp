#pragma once

// State shared by the emulated runtime's parts: the last error of the calling thread, and
// the streams with the work queued on them.
#include <functional>

#include "cuda_runtime.h"

namespace doppio_emulation {

void SetLastError(cudaError_t error);
// nullptr (the legacy default stream) or a stream created and not yet destroyed.
bool IsValidStream(cudaStream_t stream);

// Queues work on a stream. Streams keep CUDA's legacy default-stream rule: work on the
// default stream waits for the blocking streams' earlier work, and theirs for its.
void Enqueue(cudaStream_t stream, std::function<void()> work);
// Runs the work queued on one stream, or on all of them.
void RunStream(cudaStream_t stream);
void RunAllStreams();

}  // namespace doppio_emulation
