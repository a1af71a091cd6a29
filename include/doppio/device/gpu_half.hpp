#pragma once

// 16-bit activations on the GPU under BF16 and FP16 (docs/precision.md): what the device bytes
// of a float buffer hold, the conversions between them, and the GEMM that reads 16 bits and
// accumulates in fp32 on tensor cores.
#include <cstddef>

#include "doppio/util/math_functions.hpp"

namespace doppio {

class GpuContext;

enum class GpuStorage { kFloat32, kFloat16, kBfloat16 };

// "fp32", "fp16", "bf16".
inline const char* GpuStorageName(GpuStorage storage) {
  return storage == GpuStorage::kFloat16 ? "fp16"
                                         : (storage == GpuStorage::kBfloat16 ? "bf16" : "fp32");
}
inline std::size_t GpuStorageBytes(GpuStorage storage) {
  return storage == GpuStorage::kFloat32 ? 4 : 2;
}

#ifdef DOPPIO_WITH_CUDA

// Converts n elements from `from` at src to `to` at dst on gpu.stream() (round to nearest
// even; beyond fp16's range, infinity). The two ranges must not overlap.
void gpu_convert(GpuContext& gpu, long long n, GpuStorage from, const void* src, GpuStorage to,
                 void* dst);

// C = alpha op(A) op(B) + beta C, row-major like gpu_gemm, with A and B held in `ab` (16 bits)
// and C in `c_storage` (fp32, or `ab` itself), computed in fp32 (cublasGemmEx).
void gpu_gemm_ex(GpuContext& gpu, Trans trans_a, Trans trans_b, int m, int n, int k, float alpha,
                 GpuStorage ab, const void* a, const void* b, float beta, GpuStorage c_storage,
                 void* c);

#endif

}  // namespace doppio
