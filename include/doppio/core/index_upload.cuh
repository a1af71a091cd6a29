#pragma once

// For the .cu files of layers that compute an index table on the host (BatchReindex's
// picks, Filter's kept items) and read it in their kernels.
#include <algorithm>
#include <memory>
#include <vector>

#include "doppio/core/synced_memory.hpp"
#include "doppio/device/gpu_context.hpp"

namespace doppio {

// Copies `values` into *memory, grown as needed, and returns its device copy on `gpu`.
inline const int* UploadIndices(GpuContext& gpu, const std::vector<int>& values,
                                std::shared_ptr<SyncedMemory>* memory) {
  const std::size_t bytes = std::max<std::size_t>(1, values.size()) * sizeof(int);
  if (!*memory || (*memory)->size() < bytes) *memory = std::make_shared<SyncedMemory>(bytes);
  std::copy(values.begin(), values.end(), static_cast<int*>((*memory)->mutable_cpu_data()));
  return static_cast<const int*>((*memory)->gpu_data(gpu));
}

}  // namespace doppio
