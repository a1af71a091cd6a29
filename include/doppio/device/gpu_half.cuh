#pragma once

// Kernels over 16-bit storage (.cu files only): an element type per GpuStorage, read as the
// type the kernel computes in and written back, and the dispatch from a GpuStorage to it. A
// kernel written over S (the storage) and Dtype (the math) serves fp32 with S = Dtype.
#include <cstdint>
#include <type_traits>

#include "doppio/device/cuda_kernels.cuh"
#include "doppio/device/gpu_half.hpp"
#include "doppio/util/half.hpp"

namespace doppio {

// The bits of one element; the conversions are util/half.hpp's, bit for bit the host's.
struct Fp16 {
  std::uint16_t bits;
};
struct Bf16 {
  std::uint16_t bits;
};

template <typename T>
__device__ __forceinline__ T Load(T value) {
  return value;
}
__device__ __forceinline__ float Load(Fp16 value) { return HalfToFloat(value.bits); }
__device__ __forceinline__ float Load(Bf16 value) { return Bfloat16ToFloat(value.bits); }

template <typename S>
struct StoreAs {
  template <typename T>
  __device__ __forceinline__ static S From(T value) {
    return static_cast<S>(value);
  }
};
template <>
struct StoreAs<Fp16> {
  __device__ __forceinline__ static Fp16 From(float value) { return Fp16{FloatToHalf(value)}; }
};
template <>
struct StoreAs<Bf16> {
  __device__ __forceinline__ static Bf16 From(float value) { return Bf16{FloatToBfloat16(value)}; }
};

// Calls f(S()) with S the element type of `storage` in a Dtype buffer: Dtype for kFloat32
// (and always for double, which has no 16-bit storage).
template <typename Dtype, typename F>
void WithStorageType(GpuStorage storage, F&& f) {
  if constexpr (std::is_same<Dtype, float>::value) {
    if (storage == GpuStorage::kFloat16) return f(Fp16());
    if (storage == GpuStorage::kBfloat16) return f(Bf16());
  }
  f(Dtype());
}

}  // namespace doppio
