#include "doppio/util/math_functions.hpp"

#include <cblas.h>
#include <glog/logging.h>

#include <cmath>
#include <cstring>
#include <type_traits>

#include "doppio/util/rng.hpp"

namespace doppio {

namespace {
CBLAS_TRANSPOSE ToCblas(Trans t) { return t == Trans::kNo ? CblasNoTrans : CblasTrans; }
}  // namespace

template <>
void cpu_gemm<float>(Trans trans_a, Trans trans_b, int m, int n, int k, float alpha, const float* a,
                     const float* b, float beta, float* c) {
  int lda = trans_a == Trans::kNo ? k : m;
  int ldb = trans_b == Trans::kNo ? n : k;
  cblas_sgemm(CblasRowMajor, ToCblas(trans_a), ToCblas(trans_b), m, n, k, alpha, a, lda, b, ldb,
              beta, c, n);
}

template <>
void cpu_gemm<double>(Trans trans_a, Trans trans_b, int m, int n, int k, double alpha,
                      const double* a, const double* b, double beta, double* c) {
  int lda = trans_a == Trans::kNo ? k : m;
  int ldb = trans_b == Trans::kNo ? n : k;
  cblas_dgemm(CblasRowMajor, ToCblas(trans_a), ToCblas(trans_b), m, n, k, alpha, a, lda, b, ldb,
              beta, c, n);
}

template <>
void cpu_gemm<float>(Trans trans_a, Trans trans_b, int m, int n, int k, float alpha, const float* a,
                     int lda, const float* b, int ldb, float beta, float* c, int ldc) {
  cblas_sgemm(CblasRowMajor, ToCblas(trans_a), ToCblas(trans_b), m, n, k, alpha, a, lda, b, ldb,
              beta, c, ldc);
}

template <>
void cpu_gemm<double>(Trans trans_a, Trans trans_b, int m, int n, int k, double alpha,
                      const double* a, int lda, const double* b, int ldb, double beta, double* c,
                      int ldc) {
  cblas_dgemm(CblasRowMajor, ToCblas(trans_a), ToCblas(trans_b), m, n, k, alpha, a, lda, b, ldb,
              beta, c, ldc);
}

template <>
void cpu_gemv<float>(Trans trans_a, int m, int n, float alpha, const float* a, const float* x,
                     float beta, float* y) {
  cblas_sgemv(CblasRowMajor, ToCblas(trans_a), m, n, alpha, a, n, x, 1, beta, y, 1);
}

template <>
void cpu_gemv<double>(Trans trans_a, int m, int n, double alpha, const double* a, const double* x,
                      double beta, double* y) {
  cblas_dgemv(CblasRowMajor, ToCblas(trans_a), m, n, alpha, a, n, x, 1, beta, y, 1);
}

template <>
void cpu_axpy<float>(int n, float alpha, const float* x, float* y) {
  cblas_saxpy(n, alpha, x, 1, y, 1);
}
template <>
void cpu_axpy<double>(int n, double alpha, const double* x, double* y) {
  cblas_daxpy(n, alpha, x, 1, y, 1);
}

template <typename Dtype>
bool cpu_axpy_finite(std::size_t n, Dtype alpha, const Dtype* x, Dtype* y) {
  // A value is NaN or infinite when its exponent bits are all ones. Tested on the bits with an
  // integer OR, the loop vectorises (std::isfinite would stop it).
  using Bits = std::conditional_t<sizeof(Dtype) == 4, std::uint32_t, std::uint64_t>;
  constexpr Bits kExponent = sizeof(Dtype) == 4 ? Bits(0x7f800000u) : Bits(0x7ff0000000000000ull);
  Bits non_finite = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const Dtype value = y[i] + alpha * x[i];
    y[i] = value;
    Bits bits;
    std::memcpy(&bits, &value, sizeof(bits));
    non_finite |= (bits & kExponent) == kExponent;
  }
  return non_finite == 0;
}

template <typename Dtype>
void cpu_axpby(int n, Dtype alpha, const Dtype* x, Dtype beta, Dtype* y) {
  for (int i = 0; i < n; ++i) y[i] = alpha * x[i] + beta * y[i];
}

template <>
void cpu_scal<float>(int n, float alpha, float* x) {
  cblas_sscal(n, alpha, x, 1);
}
template <>
void cpu_scal<double>(int n, double alpha, double* x) {
  cblas_dscal(n, alpha, x, 1);
}

template <typename Dtype>
void cpu_scale(int n, Dtype alpha, const Dtype* x, Dtype* y) {
  for (int i = 0; i < n; ++i) y[i] = alpha * x[i];
}

template <typename Dtype>
void cpu_copy(int n, const Dtype* x, Dtype* y) {
  if (x != y && n > 0) std::memcpy(y, x, sizeof(Dtype) * n);
}

template <typename Dtype>
void cpu_set(int n, Dtype value, Dtype* y) {
  if (value == Dtype(0)) {
    std::memset(y, 0, sizeof(Dtype) * n);
    return;
  }
  for (int i = 0; i < n; ++i) y[i] = value;
}

template <>
float cpu_strided_dot<float>(int n, const float* x, int incx, const float* y, int incy) {
  return cblas_sdot(n, x, incx, y, incy);
}
template <>
double cpu_strided_dot<double>(int n, const double* x, int incx, const double* y, int incy) {
  return cblas_ddot(n, x, incx, y, incy);
}

template <typename Dtype>
Dtype cpu_dot(int n, const Dtype* x, const Dtype* y) {
  return cpu_strided_dot(n, x, 1, y, 1);
}

template <>
float cpu_asum<float>(int n, const float* x) {
  return cblas_sasum(n, x, 1);
}
template <>
double cpu_asum<double>(int n, const double* x) {
  return cblas_dasum(n, x, 1);
}

template <typename Dtype>
void cpu_add(int n, const Dtype* a, const Dtype* b, Dtype* y) {
  for (int i = 0; i < n; ++i) y[i] = a[i] + b[i];
}
template <typename Dtype>
void cpu_sub(int n, const Dtype* a, const Dtype* b, Dtype* y) {
  for (int i = 0; i < n; ++i) y[i] = a[i] - b[i];
}
template <typename Dtype>
void cpu_mul(int n, const Dtype* a, const Dtype* b, Dtype* y) {
  for (int i = 0; i < n; ++i) y[i] = a[i] * b[i];
}
template <typename Dtype>
void cpu_div(int n, const Dtype* a, const Dtype* b, Dtype* y) {
  for (int i = 0; i < n; ++i) y[i] = a[i] / b[i];
}
template <typename Dtype>
void cpu_add_scalar(int n, Dtype alpha, Dtype* y) {
  for (int i = 0; i < n; ++i) y[i] += alpha;
}
template <typename Dtype>
void cpu_powx(int n, const Dtype* a, Dtype b, Dtype* y) {
  for (int i = 0; i < n; ++i) y[i] = std::pow(a[i], b);
}
template <typename Dtype>
void cpu_sqr(int n, const Dtype* a, Dtype* y) {
  for (int i = 0; i < n; ++i) y[i] = a[i] * a[i];
}
template <typename Dtype>
void cpu_sqrt(int n, const Dtype* a, Dtype* y) {
  for (int i = 0; i < n; ++i) y[i] = std::sqrt(a[i]);
}
template <typename Dtype>
void cpu_exp(int n, const Dtype* a, Dtype* y) {
  for (int i = 0; i < n; ++i) y[i] = std::exp(a[i]);
}
template <typename Dtype>
void cpu_log(int n, const Dtype* a, Dtype* y) {
  for (int i = 0; i < n; ++i) y[i] = std::log(a[i]);
}
template <typename Dtype>
void cpu_abs(int n, const Dtype* a, Dtype* y) {
  for (int i = 0; i < n; ++i) y[i] = std::fabs(a[i]);
}
template <typename Dtype>
void cpu_sign(int n, const Dtype* a, Dtype* y) {
  for (int i = 0; i < n; ++i) y[i] = static_cast<Dtype>((Dtype(0) < a[i]) - (a[i] < Dtype(0)));
}

template <typename Dtype>
void rng_uniform(int n, Dtype a, Dtype b, Rng& rng, Dtype* r) {
  CHECK_LE(a, b);
  for (int i = 0; i < n; ++i) r[i] = static_cast<Dtype>(rng.Uniform(a, b));
}
template <typename Dtype>
void rng_gaussian(int n, Dtype mean, Dtype stddev, Rng& rng, Dtype* r) {
  CHECK_GT(stddev, 0);
  for (int i = 0; i < n; ++i) r[i] = static_cast<Dtype>(rng.Gaussian(mean, stddev));
}
template <typename Dtype>
void rng_bernoulli(int n, Dtype p, Rng& rng, unsigned int* r) {
  CHECK_GE(p, 0);
  CHECK_LE(p, 1);
  for (int i = 0; i < n; ++i) r[i] = rng.Bernoulli(p) ? 1u : 0u;
}

void SetBlasThreads(int threads) { openblas_set_num_threads(threads); }
int BlasThreads() { return openblas_get_num_threads(); }

#define DOPPIO_INSTANTIATE_MATH(Dtype)                                     \
  template void cpu_axpby<Dtype>(int, Dtype, const Dtype*, Dtype, Dtype*); \
  template void cpu_scale<Dtype>(int, Dtype, const Dtype*, Dtype*);        \
  template void cpu_copy<Dtype>(int, const Dtype*, Dtype*);                \
  template void cpu_set<Dtype>(int, Dtype, Dtype*);                        \
  template Dtype cpu_dot<Dtype>(int, const Dtype*, const Dtype*);          \
  template void cpu_add<Dtype>(int, const Dtype*, const Dtype*, Dtype*);   \
  template void cpu_sub<Dtype>(int, const Dtype*, const Dtype*, Dtype*);   \
  template void cpu_mul<Dtype>(int, const Dtype*, const Dtype*, Dtype*);   \
  template void cpu_div<Dtype>(int, const Dtype*, const Dtype*, Dtype*);   \
  template void cpu_add_scalar<Dtype>(int, Dtype, Dtype*);                 \
  template void cpu_powx<Dtype>(int, const Dtype*, Dtype, Dtype*);         \
  template void cpu_sqr<Dtype>(int, const Dtype*, Dtype*);                 \
  template void cpu_sqrt<Dtype>(int, const Dtype*, Dtype*);                \
  template void cpu_exp<Dtype>(int, const Dtype*, Dtype*);                 \
  template void cpu_log<Dtype>(int, const Dtype*, Dtype*);                 \
  template void cpu_abs<Dtype>(int, const Dtype*, Dtype*);                 \
  template void cpu_sign<Dtype>(int, const Dtype*, Dtype*);                \
  template void rng_uniform<Dtype>(int, Dtype, Dtype, Rng&, Dtype*);       \
  template void rng_gaussian<Dtype>(int, Dtype, Dtype, Rng&, Dtype*);      \
  template void rng_bernoulli<Dtype>(int, Dtype, Rng&, unsigned int*);

DOPPIO_INSTANTIATE_MATH(float)
DOPPIO_INSTANTIATE_MATH(double)
template bool cpu_axpy_finite<float>(std::size_t, float, const float*, float*);
template bool cpu_axpy_finite<double>(std::size_t, double, const double*, double*);
// Integers are copied and cleared too (argmax masks, labels).
template void cpu_copy<int>(int, const int*, int*);
template void cpu_set<int>(int, int, int*);
template void cpu_copy<unsigned int>(int, const unsigned int*, unsigned int*);
template void cpu_set<unsigned int>(int, unsigned int, unsigned int*);

}  // namespace doppio
