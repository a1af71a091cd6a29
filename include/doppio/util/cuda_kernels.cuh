#pragma once

// Helpers for writing kernels (.cu files only): the launch shape, a grid-stride loop, and a
// counter-based random generator.
#include <cuda_runtime.h>

#include <cstdint>
#include <utility>

#include "doppio/core/gpu_context.hpp"
#include "doppio/util/gpu_util.hpp"

namespace doppio {

constexpr int kGpuThreads = 256;
// Grid-stride loops cover any n with at most this many blocks.
constexpr long long kGpuMaxBlocks = 32768;

inline int GpuBlocks(long long n) {
  const long long blocks = (n + kGpuThreads - 1) / kGpuThreads;
  return static_cast<int>(blocks < 1 ? 1 : (blocks > kGpuMaxBlocks ? kGpuMaxBlocks : blocks));
}

// Launches `kernel` over n work items on the context's compute stream (nothing for n <= 0)
// and reports a failed launch as Error naming the kernel.
template <typename... Params, typename... Args>
void LaunchKernel(const char* name, GpuContext& gpu, long long n, void (*kernel)(Params...),
                  Args&&... args) {
  if (n <= 0) return;
  kernel<<<GpuBlocks(n), kGpuThreads, 0, gpu.stream()>>>(std::forward<Args>(args)...);
  const cudaError_t status = cudaGetLastError();
  if (status != cudaSuccess) detail::ThrowCudaError(status, name, __FILE__, __LINE__);
}

}  // namespace doppio

// for (i over [0, n)) with a 64-bit index, so that i + stride never overflows.
#define DOPPIO_KERNEL_LOOP(i, n)                                                             \
  for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < (n); \
       i += static_cast<long long>(blockDim.x) * gridDim.x)

namespace doppio {

// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3"): a keyed
// bijection of a 128-bit counter. Element i of a fill draws from counter (i, stream) under
// a 64-bit seed, so a kernel needs no generator state and a fill is reproducible from its
// seed alone; layers draw the seed from their own Rng.
struct PhiloxOutput {
  unsigned int v[4];
};

__device__ __forceinline__ PhiloxOutput Philox4x32(unsigned long long counter, unsigned int stream,
                                                   unsigned long long seed) {
  unsigned int c0 = static_cast<unsigned int>(counter);
  unsigned int c1 = static_cast<unsigned int>(counter >> 32);
  unsigned int c2 = stream;
  unsigned int c3 = 0;
  unsigned int k0 = static_cast<unsigned int>(seed);
  unsigned int k1 = static_cast<unsigned int>(seed >> 32);
  constexpr unsigned int kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
  constexpr unsigned int kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
#pragma unroll
  for (int round = 0; round < 10; ++round) {
    const unsigned int hi0 = __umulhi(kM0, c0), lo0 = kM0 * c0;
    const unsigned int hi1 = __umulhi(kM1, c2), lo1 = kM1 * c2;
    const unsigned int n0 = hi1 ^ c1 ^ k0;
    const unsigned int n2 = hi0 ^ c3 ^ k1;
    c0 = n0;
    c1 = lo1;
    c2 = n2;
    c3 = lo0;
    k0 += kW0;
    k1 += kW1;
  }
  PhiloxOutput out;
  out.v[0] = c0;
  out.v[1] = c1;
  out.v[2] = c2;
  out.v[3] = c3;
  return out;
}

// Uniform in [0, 1) from random bits, with the full mantissa of each type.
template <typename Dtype>
__device__ __forceinline__ Dtype UniformFromBits(unsigned int a, unsigned int b);

template <>
__device__ __forceinline__ float UniformFromBits<float>(unsigned int a, unsigned int) {
  return static_cast<float>(a >> 8) * (1.0f / 16777216.0f);  // 24 bits
}

template <>
__device__ __forceinline__ double UniformFromBits<double>(unsigned int a, unsigned int b) {
  const unsigned long long bits =
      (static_cast<unsigned long long>(a >> 5) << 26) | static_cast<unsigned long long>(b >> 6);
  return static_cast<double>(bits) * (1.0 / 9007199254740992.0);  // 53 bits
}

}  // namespace doppio
