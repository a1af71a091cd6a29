#pragma once

#include <cstddef>

namespace doppio {

// Host scratch for one layer's Forward or Backward on the calling thread, the host twin of
// GpuContext::Workspace. Every caller on a thread gets the same block, grown to the largest
// request and kept, so layers whose buffers live only while they run (the convolutions'
// column matrices) share one block instead of each holding its own for the life of the net.
// The contents are undefined and valid until the next call on this thread: a layer asks
// once, before it splits its work over the thread pool.
void* HostWorkspace(std::size_t bytes);
// The bytes the calling thread's workspace holds.
std::size_t HostWorkspaceBytes();

}  // namespace doppio
