#pragma once

#include <cstddef>
#include <cstdint>

namespace doppio {

class Rng;

enum class Trans { kNo, kYes };

// Dense linear algebra on host memory, row-major, backed by OpenBLAS.
// C = alpha * op(A) * op(B) + beta * C, with op(A) M x K and op(B) K x N.
template <typename Dtype>
void cpu_gemm(Trans trans_a, Trans trans_b, int m, int n, int k, Dtype alpha, const Dtype* a,
              const Dtype* b, Dtype beta, Dtype* c);
// The same on sub-matrices: lda, ldb and ldc are the row strides of A, B and C as stored
// (e.g. a block of columns of a wider matrix).
template <typename Dtype>
void cpu_gemm(Trans trans_a, Trans trans_b, int m, int n, int k, Dtype alpha, const Dtype* a,
              int lda, const Dtype* b, int ldb, Dtype beta, Dtype* c, int ldc);
// y = alpha * op(A) * x + beta * y, A is M x N.
template <typename Dtype>
void cpu_gemv(Trans trans_a, int m, int n, Dtype alpha, const Dtype* a, const Dtype* x, Dtype beta,
              Dtype* y);
// y = alpha * x + y
template <typename Dtype>
void cpu_axpy(int n, Dtype alpha, const Dtype* x, Dtype* y);
// y = alpha * x + beta * y
template <typename Dtype>
void cpu_axpby(int n, Dtype alpha, const Dtype* x, Dtype beta, Dtype* y);
// x *= alpha
template <typename Dtype>
void cpu_scal(int n, Dtype alpha, Dtype* x);
// y = alpha * x
template <typename Dtype>
void cpu_scale(int n, Dtype alpha, const Dtype* x, Dtype* y);
template <typename Dtype>
void cpu_copy(int n, const Dtype* x, Dtype* y);
template <typename Dtype>
void cpu_set(int n, Dtype value, Dtype* y);
template <typename Dtype>
Dtype cpu_dot(int n, const Dtype* x, const Dtype* y);
template <typename Dtype>
Dtype cpu_strided_dot(int n, const Dtype* x, int incx, const Dtype* y, int incy);
// Sum of absolute values.
template <typename Dtype>
Dtype cpu_asum(int n, const Dtype* x);

// Element-wise: y[i] = a[i] op b[i] (y may alias a or b).
template <typename Dtype>
void cpu_add(int n, const Dtype* a, const Dtype* b, Dtype* y);
template <typename Dtype>
void cpu_sub(int n, const Dtype* a, const Dtype* b, Dtype* y);
template <typename Dtype>
void cpu_mul(int n, const Dtype* a, const Dtype* b, Dtype* y);
template <typename Dtype>
void cpu_div(int n, const Dtype* a, const Dtype* b, Dtype* y);
// Element-wise: y[i] = f(a[i]).
template <typename Dtype>
void cpu_add_scalar(int n, Dtype alpha, Dtype* y);
template <typename Dtype>
void cpu_powx(int n, const Dtype* a, Dtype b, Dtype* y);
template <typename Dtype>
void cpu_sqr(int n, const Dtype* a, Dtype* y);
template <typename Dtype>
void cpu_sqrt(int n, const Dtype* a, Dtype* y);
template <typename Dtype>
void cpu_exp(int n, const Dtype* a, Dtype* y);
template <typename Dtype>
void cpu_log(int n, const Dtype* a, Dtype* y);
template <typename Dtype>
void cpu_abs(int n, const Dtype* a, Dtype* y);
// -1, 0 or 1.
template <typename Dtype>
void cpu_sign(int n, const Dtype* a, Dtype* y);

// Random fills from a seeded Rng.
template <typename Dtype>
void rng_uniform(int n, Dtype a, Dtype b, Rng& rng, Dtype* r);
template <typename Dtype>
void rng_gaussian(int n, Dtype mean, Dtype stddev, Rng& rng, Dtype* r);
// r[i] = 1 with probability p, else 0.
template <typename Dtype>
void rng_bernoulli(int n, Dtype p, Rng& rng, unsigned int* r);

// Sets the number of threads OpenBLAS uses (the CPU kernels' parallelism).
void SetBlasThreads(int threads);

#ifdef DOPPIO_WITH_CUDA
class GpuContext;

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

#endif

}  // namespace doppio
