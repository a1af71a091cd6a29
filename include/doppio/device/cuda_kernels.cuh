#pragma once

// Helpers for writing kernels (.cu files only): the launch shape, a grid-stride loop, and a
// counter-based random generator.
#include <cuda_runtime.h>

#include <climits>
#include <cstdint>
#include <memory>
#include <utility>

#include "doppio/device/gpu_context.hpp"
#include "doppio/device/gpu_math.hpp"
#include "doppio/device/gpu_util.hpp"
#include "doppio/util/philox.hpp"

// kernel<<<grid, block, 0, stream>>>, spelled so that the host emulation
// (DOPPIO_CUDA=EMULATE, tests/cuda_emulation/) can run it too.
#ifdef DOPPIO_CUDA_EMULATION
#define DOPPIO_LAUNCH(kernel, grid, block, stream) \
  ::doppio_emulation::Launch(kernel, grid, block, stream)
#else
#define DOPPIO_LAUNCH(kernel, grid, block, stream) kernel<<<grid, block, 0, stream>>>
#endif

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
  DOPPIO_LAUNCH(kernel, GpuBlocks(n), kGpuThreads, gpu.stream())(std::forward<Args>(args)...);
  const cudaError_t status = cudaGetLastError();
  if (status != cudaSuccess) detail::ThrowCudaError(status, name, __FILE__, __LINE__);
}

}  // namespace doppio

// for (i over [0, n)) with a 64-bit index, so that i + stride never overflows.
#define DOPPIO_KERNEL_LOOP(i, n)                                                             \
  for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < (n); \
       i += static_cast<long long>(blockDim.x) * gridDim.x)

namespace doppio {

// The random words of element i of a fill: counter (i, stream) under the fill's seed, so a
// fill is reproducible from its seed alone, whatever the launch shape.
__device__ __forceinline__ PhiloxWords CounterWords(long long i, unsigned int stream,
                                                    unsigned long long seed) {
  const auto counter = static_cast<std::uint64_t>(i);
  return Philox4x32(static_cast<std::uint32_t>(counter), static_cast<std::uint32_t>(counter >> 32),
                    stream, 0u, seed);
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

namespace doppio {

// Per-channel sums over a (outer, channels, inner) layout: out[c] = sum over n and k of
// term(index of (n, c, k)), then out[c] = result (beta 0) or beta * out[c] + result. One block
// per channel reduces in a fixed order, so the result is deterministic. `Term` is a functor
// with `__device__ Dtype operator()(long long index) const`.
constexpr int kChannelSumThreads = 512;

template <typename Dtype, typename Term>
__global__ void ChannelSumKernel(int outer, int channels, int inner, Term term, Dtype beta,
                                 Dtype* out) {
  __shared__ Dtype cache[kChannelSumThreads];
  const long long per_channel = static_cast<long long>(outer) * inner;
  for (int c = blockIdx.x; c < channels; c += gridDim.x) {
    Dtype sum = 0;
    for (long long j = threadIdx.x; j < per_channel; j += blockDim.x) {
      const long long n = j / inner;
      const long long k = j - n * inner;
      sum += term((n * channels + c) * inner + k);
    }
    cache[threadIdx.x] = sum;
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
      if (threadIdx.x < s) cache[threadIdx.x] += cache[threadIdx.x + s];
      __syncthreads();
    }
    if (threadIdx.x == 0) out[c] = beta == Dtype(0) ? cache[0] : beta * out[c] + cache[0];
    __syncthreads();  // cache is reused for the next channel
  }
}

template <typename Dtype, typename Term>
void ChannelSum(GpuContext& gpu, int outer, int channels, int inner, Term term, Dtype beta,
                Dtype* out) {
  if (channels <= 0) return;
  const int blocks = channels < 65535 ? channels : 65535;
  void (*kernel)(int, int, int, Term, Dtype, Dtype*) = ChannelSumKernel<Dtype, Term>;
  DOPPIO_LAUNCH(kernel, blocks, kChannelSumThreads, gpu.stream())
  (outer, channels, inner, term, beta, out);
  const cudaError_t status = cudaGetLastError();
  if (status != cudaSuccess) detail::ThrowCudaError(status, "ChannelSumKernel", __FILE__, __LINE__);
}

// a[i] (times b[i] when b is given).
template <typename Dtype>
struct ProductTerm {
  const Dtype* a;
  const Dtype* b;
  __device__ Dtype operator()(long long i) const { return b ? a[i] * b[i] : a[i]; }
};

}  // namespace doppio

namespace doppio {

// Block-wide reductions for kernels launched with a power-of-two blockDim.x of at most
// kGpuThreads; every thread of the block must call them and gets the result. `cache` is a
// __shared__ array of kGpuThreads elements.
template <typename Dtype>
__device__ Dtype BlockReduceSum(Dtype value, Dtype* cache) {
  cache[threadIdx.x] = value;
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) cache[threadIdx.x] += cache[threadIdx.x + s];
    __syncthreads();
  }
  const Dtype result = cache[0];
  __syncthreads();  // cache may be reused right away
  return result;
}

template <typename Dtype>
__device__ Dtype BlockReduceMax(Dtype value, Dtype* cache) {
  cache[threadIdx.x] = value;
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) cache[threadIdx.x] = max(cache[threadIdx.x], cache[threadIdx.x + s]);
    __syncthreads();
  }
  const Dtype result = cache[0];
  __syncthreads();
  return result;
}

// Launches one block of kGpuThreads per row (at most 65535 blocks; kernels loop over rows
// with a block stride).
inline int GpuRowBlocks(long long rows) {
  return static_cast<int>(rows < 1 ? 1 : (rows > 65535 ? 65535 : rows));
}

}  // namespace doppio

namespace doppio {

// Copies `rows` blocks of `chunk` values: dst[r * dst_stride + dst_offset + k] =
// src[r * src_stride + src_offset + k] (Concat, Slice).
template <typename Dtype>
__global__ void StridedBlockCopy(long long n, int chunk, const Dtype* src, long long src_stride,
                                 long long src_offset, Dtype* dst, long long dst_stride,
                                 long long dst_offset) {
  DOPPIO_KERNEL_LOOP(i, n) {
    const long long r = i / chunk;
    const long long k = i - r * chunk;
    dst[r * dst_stride + dst_offset + k] = src[r * src_stride + src_offset + k];
  }
}

}  // namespace doppio
