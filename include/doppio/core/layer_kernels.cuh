#pragma once

// What a layer's .cu file needs beyond device/cuda_kernels.cuh: the explicit instantiation of
// its GPU passes, and a device flag through which kernels report a bad input index.
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

}  // namespace doppio
