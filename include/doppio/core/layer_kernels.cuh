#pragma once

// What a layer's .cu file needs beyond device/cuda_kernels.cuh: the explicit instantiation of
// its GPU passes, and a device flag through which kernels report a bad input index.
#include <algorithm>
#include <climits>
#include <memory>
#include <vector>

#include "doppio/core/blob.hpp"
#include "doppio/core/synced_memory.hpp"
#include "doppio/device/cuda_kernels.cuh"

// Instantiates a layer's Forward_gpu and Backward_gpu, defined in its .cu file, for float and
// double (the class itself is instantiated in its .cpp file).
#define DOPPIO_INSTANTIATE_LAYER_GPU_FUNCS(classname)                                        \
  template void classname<float>::Forward_gpu(const std::vector<::doppio::Blob<float>*>&,    \
                                              const std::vector<::doppio::Blob<float>*>&);   \
  template void classname<double>::Forward_gpu(const std::vector<::doppio::Blob<double>*>&,  \
                                               const std::vector<::doppio::Blob<double>*>&); \
  template void classname<float>::Backward_gpu(const std::vector<::doppio::Blob<float>*>&,   \
                                               const std::vector<bool>&,                     \
                                               const std::vector<::doppio::Blob<float>*>&);  \
  template void classname<double>::Backward_gpu(const std::vector<::doppio::Blob<double>*>&, \
                                                const std::vector<bool>&,                    \
                                                const std::vector<::doppio::Blob<double>*>&)

namespace doppio {

// A device int through which a kernel reports the first bad index it met (an invalid label):
// kernels lower it with atomicMin; the host reads it back after the kernel (this waits).
inline int* ResetIndexFlag(GpuContext& gpu, std::shared_ptr<SyncedMemory>* flag) {
  if (!*flag) *flag = std::make_shared<SyncedMemory>(sizeof(int));
  int* ptr = static_cast<int*>((*flag)->mutable_gpu_data(gpu));
  gpu_set<int>(gpu, 1, INT_MAX, ptr);
  return ptr;
}

// INT_MAX when nothing was reported.
inline int ReadIndexFlag(const std::shared_ptr<SyncedMemory>& flag) {
  return *static_cast<const int*>(flag->cpu_data());
}

// Copies an index table a layer computed on the host (BatchReindex's picks, Filter's kept
// items) into *memory, grown as needed, and returns its device copy.
inline const int* UploadIndices(GpuContext& gpu, const std::vector<int>& values,
                                std::shared_ptr<SyncedMemory>* memory) {
  const std::size_t bytes = std::max<std::size_t>(1, values.size()) * sizeof(int);
  if (!*memory || (*memory)->size() < bytes) *memory = std::make_shared<SyncedMemory>(bytes);
  std::copy(values.begin(), values.end(), static_cast<int*>((*memory)->mutable_cpu_data()));
  return static_cast<const int*>((*memory)->gpu_data(gpu));
}

}  // namespace doppio
