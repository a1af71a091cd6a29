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
// y = alpha * x + y, returning whether every new y is finite: an update and the check that
// it did not diverge in one pass over memory (no second read of y to look for NaN or Inf).
template <typename Dtype>
bool cpu_axpy_finite(std::size_t n, Dtype alpha, const Dtype* x, Dtype* y);
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
// The number of threads OpenBLAS uses (OPENBLAS_NUM_THREADS, OMP_NUM_THREADS, the cores, or
// what SetBlasThreads set).
int BlasThreads();

}  // namespace doppio
