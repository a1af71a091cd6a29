#pragma once

// The math of util/math_functions.hpp on device memory (CUDA builds only).
#ifdef DOPPIO_WITH_CUDA

#include <cstdint>

#include "doppio/device/gpu_context.hpp"
#include "doppio/util/math_functions.hpp"

namespace doppio {

// The same operations on device memory, row-major like the CPU versions, queued in order
// on gpu.stream(): BLAS on cuBLAS, the rest as CUDA kernels. Functions that return a value
// (dot, asum) wait for it. Failures throw Error naming the call.
template <typename Dtype>
void gpu_gemm(GpuContext& gpu, Trans trans_a, Trans trans_b, int m, int n, int k, Dtype alpha,
              const Dtype* a, const Dtype* b, Dtype beta, Dtype* c);
// `batch` products C_i = alpha op(A_i) op(B_i) + beta C_i, the i-th operands stride_* apart.
template <typename Dtype>
void gpu_gemm_strided_batched(GpuContext& gpu, Trans trans_a, Trans trans_b, int m, int n, int k,
                              Dtype alpha, const Dtype* a, long long stride_a, const Dtype* b,
                              long long stride_b, Dtype beta, Dtype* c, long long stride_c,
                              int batch);
template <typename Dtype>
void gpu_gemv(GpuContext& gpu, Trans trans_a, int m, int n, Dtype alpha, const Dtype* a,
              const Dtype* x, Dtype beta, Dtype* y);
template <typename Dtype>
void gpu_axpy(GpuContext& gpu, int n, Dtype alpha, const Dtype* x, Dtype* y);
// y = alpha * x + y, returning whether every new y is finite (cpu_axpy_finite); waits.
template <typename Dtype>
bool gpu_axpy_finite(GpuContext& gpu, std::size_t n, Dtype alpha, const Dtype* x, Dtype* y);
template <typename Dtype>
void gpu_axpby(GpuContext& gpu, int n, Dtype alpha, const Dtype* x, Dtype beta, Dtype* y);
template <typename Dtype>
void gpu_scal(GpuContext& gpu, int n, Dtype alpha, Dtype* x);
template <typename Dtype>
void gpu_scale(GpuContext& gpu, int n, Dtype alpha, const Dtype* x, Dtype* y);
template <typename Dtype>
void gpu_copy(GpuContext& gpu, int n, const Dtype* x, Dtype* y);
template <typename Dtype>
void gpu_set(GpuContext& gpu, int n, Dtype value, Dtype* y);
template <typename Dtype>
Dtype gpu_dot(GpuContext& gpu, int n, const Dtype* x, const Dtype* y);
template <typename Dtype>
Dtype gpu_asum(GpuContext& gpu, int n, const Dtype* x);
// Sum of the values (not of their absolute values).
template <typename Dtype>
Dtype gpu_sum(GpuContext& gpu, int n, const Dtype* x);

template <typename Dtype>
void gpu_add(GpuContext& gpu, int n, const Dtype* a, const Dtype* b, Dtype* y);
template <typename Dtype>
void gpu_sub(GpuContext& gpu, int n, const Dtype* a, const Dtype* b, Dtype* y);
template <typename Dtype>
void gpu_mul(GpuContext& gpu, int n, const Dtype* a, const Dtype* b, Dtype* y);
template <typename Dtype>
void gpu_div(GpuContext& gpu, int n, const Dtype* a, const Dtype* b, Dtype* y);
template <typename Dtype>
void gpu_add_scalar(GpuContext& gpu, int n, Dtype alpha, Dtype* y);
template <typename Dtype>
void gpu_powx(GpuContext& gpu, int n, const Dtype* a, Dtype b, Dtype* y);
template <typename Dtype>
void gpu_sqr(GpuContext& gpu, int n, const Dtype* a, Dtype* y);
template <typename Dtype>
void gpu_sqrt(GpuContext& gpu, int n, const Dtype* a, Dtype* y);
template <typename Dtype>
void gpu_exp(GpuContext& gpu, int n, const Dtype* a, Dtype* y);
template <typename Dtype>
void gpu_log(GpuContext& gpu, int n, const Dtype* a, Dtype* y);
template <typename Dtype>
void gpu_abs(GpuContext& gpu, int n, const Dtype* a, Dtype* y);
template <typename Dtype>
void gpu_sign(GpuContext& gpu, int n, const Dtype* a, Dtype* y);

// Random fills on the device from a 64-bit seed (Philox counter-based: the same seed gives
// the same values); the Rng overloads draw the seed from rng.
template <typename Dtype>
void gpu_rng_uniform(GpuContext& gpu, int n, Dtype a, Dtype b, std::uint64_t seed, Dtype* r);
template <typename Dtype>
void gpu_rng_gaussian(GpuContext& gpu, int n, Dtype mean, Dtype stddev, std::uint64_t seed,
                      Dtype* r);
template <typename Dtype>
void gpu_rng_bernoulli(GpuContext& gpu, int n, Dtype p, std::uint64_t seed, unsigned int* r);
template <typename Dtype>
void gpu_rng_uniform(GpuContext& gpu, int n, Dtype a, Dtype b, Rng& rng, Dtype* r);
template <typename Dtype>
void gpu_rng_gaussian(GpuContext& gpu, int n, Dtype mean, Dtype stddev, Rng& rng, Dtype* r);
template <typename Dtype>
void gpu_rng_bernoulli(GpuContext& gpu, int n, Dtype p, Rng& rng, unsigned int* r);

}  // namespace doppio

#endif
