#pragma once

#include <memory>

#include "doppio/device/gpu_context.hpp"
#include "doppio/parallel/staging_communicator.hpp"

namespace doppio {

// The DeviceMemoryOps of a GPU, for the StagingCommunicator over MPI (ranks sharing a GPU,
// or a build without NCCL): pinned host memory from cudaHostAlloc, copies by cudaMemcpyAsync
// on a stream of its own followed by a synchronisation of that stream, so that staging
// never waits for the compute stream's queue. Fence records an event on `gpu`'s compute
// stream: the staged copies of a gradient bucket start once the kernels that wrote it are
// done, while the kernels queued after them go on. The copies may be called from any thread
// (the staging thread): each makes the device current first.
// Throws Error in a build without CUDA.
std::shared_ptr<DeviceMemoryOps> MakeGpuMemoryOps(std::shared_ptr<GpuContext> gpu);

}  // namespace doppio
