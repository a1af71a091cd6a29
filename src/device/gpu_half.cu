#include <cublas_v2.h>

#include "doppio/device/gpu_context.hpp"
#include "doppio/device/gpu_half.cuh"
#include "doppio/device/gpu_util.hpp"

namespace doppio {

namespace {
template <typename From, typename To>
__global__ void ConvertKernel(long long n, const From* src, To* dst) {
  DOPPIO_KERNEL_LOOP(i, n) { dst[i] = StoreAs<To>::From(Load(src[i])); }
}

cudaDataType CudaType(GpuStorage storage) {
  switch (storage) {
    case GpuStorage::kFloat16:
      return CUDA_R_16F;
    case GpuStorage::kBfloat16:
      return CUDA_R_16BF;
    case GpuStorage::kFloat32:
      break;
  }
  return CUDA_R_32F;
}

cublasOperation_t ToCublas(Trans t) { return t == Trans::kNo ? CUBLAS_OP_N : CUBLAS_OP_T; }
}  // namespace

void gpu_convert(GpuContext& gpu, long long n, GpuStorage from, const void* src, GpuStorage to,
                 void* dst) {
  WithStorageType<float>(from, [&](auto from_type) {
    using From = decltype(from_type);
    WithStorageType<float>(to, [&](auto to_type) {
      using To = decltype(to_type);
      LaunchKernel("ConvertKernel", gpu, n, ConvertKernel<From, To>, n,
                   static_cast<const From*>(src), static_cast<To*>(dst));
    });
  });
}

void gpu_gemm_ex(GpuContext& gpu, Trans trans_a, Trans trans_b, int m, int n, int k, float alpha,
                 GpuStorage ab, const void* a, const void* b, float beta, GpuStorage c_storage,
                 void* c) {
  if (m <= 0 || n <= 0) return;
  DOPPIO_ENSURE(k > 0) << "a 16-bit GEMM of " << m << " x " << n << " needs k > 0";
  const int lda = trans_a == Trans::kNo ? k : m;
  const int ldb = trans_b == Trans::kNo ? n : k;
  // Column-major, as gpu_gemm: C^T = op(B)^T op(A)^T.
  DOPPIO_CUBLAS_CHECK(cublasGemmEx(gpu.cublas(), ToCublas(trans_b), ToCublas(trans_a), n, m, k,
                                   &alpha, b, CudaType(ab), ldb, a, CudaType(ab), lda, &beta, c,
                                   CudaType(c_storage), n, CUBLAS_COMPUTE_32F,
                                   CUBLAS_GEMM_DEFAULT));
}

}  // namespace doppio
