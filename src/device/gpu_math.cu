#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <glog/logging.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "doppio/device/cuda_kernels.cuh"
#include "doppio/device/gpu_context.hpp"
#include "doppio/device/gpu_util.hpp"
#include "doppio/util/math_functions.hpp"
#include "doppio/util/rng.hpp"

namespace doppio {

namespace {
cublasOperation_t ToCublas(Trans t) { return t == Trans::kNo ? CUBLAS_OP_N : CUBLAS_OP_T; }

// cuBLAS is column-major: a row-major C = op(A) op(B) is the column-major
// C^T = op(B)^T op(A)^T, so the operands swap places and keep their leading dimensions.
template <typename Dtype>
struct Cublas;

template <>
struct Cublas<float> {
  static cublasStatus_t gemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
                             int n, int k, const float* alpha, const float* a, int lda,
                             const float* b, int ldb, const float* beta, float* c, int ldc) {
    return cublasSgemm(h, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  }
  static cublasStatus_t gemm_strided(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb,
                                     int m, int n, int k, const float* alpha, const float* a,
                                     int lda, long long sa, const float* b, int ldb, long long sb,
                                     const float* beta, float* c, int ldc, long long sc,
                                     int batch) {
    return cublasSgemmStridedBatched(h, ta, tb, m, n, k, alpha, a, lda, sa, b, ldb, sb, beta, c,
                                     ldc, sc, batch);
  }
  static cublasStatus_t gemv(cublasHandle_t h, cublasOperation_t t, int m, int n,
                             const float* alpha, const float* a, int lda, const float* x,
                             const float* beta, float* y) {
    return cublasSgemv(h, t, m, n, alpha, a, lda, x, 1, beta, y, 1);
  }
  static cublasStatus_t axpy(cublasHandle_t h, int n, const float* alpha, const float* x,
                             float* y) {
    return cublasSaxpy(h, n, alpha, x, 1, y, 1);
  }
  static cublasStatus_t scal(cublasHandle_t h, int n, const float* alpha, float* x) {
    return cublasSscal(h, n, alpha, x, 1);
  }
  static cublasStatus_t dot(cublasHandle_t h, int n, const float* x, const float* y, float* out) {
    return cublasSdot(h, n, x, 1, y, 1, out);
  }
  static cublasStatus_t asum(cublasHandle_t h, int n, const float* x, float* out) {
    return cublasSasum(h, n, x, 1, out);
  }
};

template <>
struct Cublas<double> {
  static cublasStatus_t gemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
                             int n, int k, const double* alpha, const double* a, int lda,
                             const double* b, int ldb, const double* beta, double* c, int ldc) {
    return cublasDgemm(h, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  }
  static cublasStatus_t gemm_strided(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb,
                                     int m, int n, int k, const double* alpha, const double* a,
                                     int lda, long long sa, const double* b, int ldb, long long sb,
                                     const double* beta, double* c, int ldc, long long sc,
                                     int batch) {
    return cublasDgemmStridedBatched(h, ta, tb, m, n, k, alpha, a, lda, sa, b, ldb, sb, beta, c,
                                     ldc, sc, batch);
  }
  static cublasStatus_t gemv(cublasHandle_t h, cublasOperation_t t, int m, int n,
                             const double* alpha, const double* a, int lda, const double* x,
                             const double* beta, double* y) {
    return cublasDgemv(h, t, m, n, alpha, a, lda, x, 1, beta, y, 1);
  }
  static cublasStatus_t axpy(cublasHandle_t h, int n, const double* alpha, const double* x,
                             double* y) {
    return cublasDaxpy(h, n, alpha, x, 1, y, 1);
  }
  static cublasStatus_t scal(cublasHandle_t h, int n, const double* alpha, double* x) {
    return cublasDscal(h, n, alpha, x, 1);
  }
  static cublasStatus_t dot(cublasHandle_t h, int n, const double* x, const double* y,
                            double* out) {
    return cublasDdot(h, n, x, 1, y, 1, out);
  }
  static cublasStatus_t asum(cublasHandle_t h, int n, const double* x, double* out) {
    return cublasDasum(h, n, x, 1, out);
  }
};

template <typename Dtype>
__global__ void SetKernel(long long n, Dtype value, Dtype* y) {
  DOPPIO_KERNEL_LOOP(i, n) { y[i] = value; }
}

template <typename Dtype>
__global__ void ScaleKernel(long long n, Dtype alpha, const Dtype* x, Dtype* y) {
  DOPPIO_KERNEL_LOOP(i, n) { y[i] = alpha * x[i]; }
}

template <typename Dtype>
__global__ void AxpbyKernel(long long n, Dtype alpha, const Dtype* x, Dtype beta, Dtype* y) {
  DOPPIO_KERNEL_LOOP(i, n) { y[i] = alpha * x[i] + beta * y[i]; }
}

template <typename Dtype>
__global__ void AxpyFiniteKernel(long long n, Dtype alpha, const Dtype* x, Dtype* y,
                                 int* non_finite) {
  bool seen = false;
  DOPPIO_KERNEL_LOOP(i, n) {
    const Dtype value = y[i] + alpha * x[i];
    y[i] = value;
    seen |= !isfinite(value);
  }
  // Every writer stores the same 1: no atomic needed.
  if (seen) *non_finite = 1;
}

template <typename Dtype>
__global__ void AddScalarKernel(long long n, Dtype alpha, Dtype* y) {
  DOPPIO_KERNEL_LOOP(i, n) { y[i] += alpha; }
}

enum class BinaryOp { kAdd, kSub, kMul, kDiv };

template <typename Dtype, BinaryOp kOp>
__global__ void BinaryKernel(long long n, const Dtype* a, const Dtype* b, Dtype* y) {
  DOPPIO_KERNEL_LOOP(i, n) {
    switch (kOp) {
      case BinaryOp::kAdd:
        y[i] = a[i] + b[i];
        break;
      case BinaryOp::kSub:
        y[i] = a[i] - b[i];
        break;
      case BinaryOp::kMul:
        y[i] = a[i] * b[i];
        break;
      case BinaryOp::kDiv:
        y[i] = a[i] / b[i];
        break;
    }
  }
}

enum class UnaryOp { kSqr, kSqrt, kExp, kLog, kAbs, kSign };

template <typename Dtype, UnaryOp kOp>
__global__ void UnaryKernel(long long n, const Dtype* a, Dtype* y) {
  DOPPIO_KERNEL_LOOP(i, n) {
    const Dtype x = a[i];
    switch (kOp) {
      case UnaryOp::kSqr:
        y[i] = x * x;
        break;
      case UnaryOp::kSqrt:
        y[i] = sqrt(x);
        break;
      case UnaryOp::kExp:
        y[i] = exp(x);
        break;
      case UnaryOp::kLog:
        y[i] = log(x);
        break;
      case UnaryOp::kAbs:
        y[i] = fabs(x);
        break;
      case UnaryOp::kSign:
        y[i] = (Dtype(0) < x) - (x < Dtype(0));
        break;
    }
  }
}

template <typename Dtype>
__global__ void PowxKernel(long long n, const Dtype* a, Dtype b, Dtype* y) {
  DOPPIO_KERNEL_LOOP(i, n) { y[i] = pow(a[i], b); }
}

// Partial sums, one per block; the host adds them up.
constexpr int kSumBlocks = 1024;

template <typename Dtype>
__global__ void PartialSumKernel(long long n, const Dtype* x, Dtype* partial) {
  __shared__ Dtype cache[kGpuThreads];
  Dtype sum = 0;
  DOPPIO_KERNEL_LOOP(i, n) { sum += x[i]; }
  const Dtype block_sum = BlockReduceSum(sum, cache);
  if (threadIdx.x == 0) partial[blockIdx.x] = block_sum;
}

template <typename Dtype>
__global__ void UniformKernel(long long n, Dtype a, Dtype b, unsigned long long seed, Dtype* r) {
  DOPPIO_KERNEL_LOOP(i, n) {
    const PhiloxWords bits = CounterWords(i, 0u, seed);
    r[i] = a + (b - a) * UniformFromBits<Dtype>(bits.v[0], bits.v[1]);
  }
}

template <typename Dtype>
__global__ void GaussianKernel(long long n, Dtype mean, Dtype stddev, unsigned long long seed,
                               Dtype* r) {
  DOPPIO_KERNEL_LOOP(i, n) {
    const PhiloxWords bits = CounterWords(i, 1u, seed);
    // Box-Muller; 1 - u lies in (0, 1], so the log is finite.
    const Dtype u1 = Dtype(1) - UniformFromBits<Dtype>(bits.v[0], bits.v[1]);
    const Dtype u2 = UniformFromBits<Dtype>(bits.v[2], bits.v[3]);
    const Dtype radius = sqrt(Dtype(-2) * log(u1));
    r[i] = mean + stddev * radius * cos(Dtype(6.283185307179586) * u2);
  }
}

template <typename Dtype>
__global__ void BernoulliKernel(long long n, Dtype p, unsigned long long seed, unsigned int* r) {
  DOPPIO_KERNEL_LOOP(i, n) {
    const PhiloxWords bits = CounterWords(i, 2u, seed);
    r[i] = UniformFromBits<Dtype>(bits.v[0], bits.v[1]) < p ? 1u : 0u;
  }
}

}  // namespace

template <typename Dtype>
void gpu_gemm(GpuContext& gpu, Trans trans_a, Trans trans_b, int m, int n, int k, Dtype alpha,
              const Dtype* a, const Dtype* b, Dtype beta, Dtype* c) {
  if (m <= 0 || n <= 0) return;
  if (k <= 0) {
    // An empty product: C = beta C (cuBLAS would reject the zero leading dimension).
    if (beta == Dtype(0)) {
      gpu_set(gpu, m * n, Dtype(0), c);
    } else {
      gpu_scal(gpu, m * n, beta, c);
    }
    return;
  }
  const int lda = trans_a == Trans::kNo ? k : m;
  const int ldb = trans_b == Trans::kNo ? n : k;
  DOPPIO_CUBLAS_CHECK(Cublas<Dtype>::gemm(gpu.cublas(), ToCublas(trans_b), ToCublas(trans_a), n, m,
                                          k, &alpha, b, ldb, a, lda, &beta, c, n));
}

template <typename Dtype>
void gpu_gemm_strided_batched(GpuContext& gpu, Trans trans_a, Trans trans_b, int m, int n, int k,
                              Dtype alpha, const Dtype* a, long long stride_a, const Dtype* b,
                              long long stride_b, Dtype beta, Dtype* c, long long stride_c,
                              int batch) {
  if (m <= 0 || n <= 0 || batch <= 0) return;
  if (k <= 0) {
    for (int i = 0; i < batch; ++i)
      gpu_gemm(gpu, trans_a, trans_b, m, n, 0, alpha, a, b, beta, c + i * stride_c);
    return;
  }
  const int lda = trans_a == Trans::kNo ? k : m;
  const int ldb = trans_b == Trans::kNo ? n : k;
  DOPPIO_CUBLAS_CHECK(Cublas<Dtype>::gemm_strided(
      gpu.cublas(), ToCublas(trans_b), ToCublas(trans_a), n, m, k, &alpha, b, ldb, stride_b, a, lda,
      stride_a, &beta, c, n, stride_c, batch));
}

template <typename Dtype>
void gpu_gemv(GpuContext& gpu, Trans trans_a, int m, int n, Dtype alpha, const Dtype* a,
              const Dtype* x, Dtype beta, Dtype* y) {
  // Row-major A (m x n) is column-major A^T (n x m, leading dimension n).
  const int y_len = trans_a == Trans::kNo ? m : n;
  if (y_len <= 0) return;
  if (m <= 0 || n <= 0) {
    if (beta == Dtype(0)) {
      gpu_set(gpu, y_len, Dtype(0), y);
    } else {
      gpu_scal(gpu, y_len, beta, y);
    }
    return;
  }
  const cublasOperation_t op = trans_a == Trans::kNo ? CUBLAS_OP_T : CUBLAS_OP_N;
  DOPPIO_CUBLAS_CHECK(Cublas<Dtype>::gemv(gpu.cublas(), op, n, m, &alpha, a, n, x, &beta, y));
}

template <typename Dtype>
void gpu_axpy(GpuContext& gpu, int n, Dtype alpha, const Dtype* x, Dtype* y) {
  if (n <= 0) return;
  DOPPIO_CUBLAS_CHECK(Cublas<Dtype>::axpy(gpu.cublas(), n, &alpha, x, y));
}

template <typename Dtype>
bool gpu_axpy_finite(GpuContext& gpu, std::size_t n, Dtype alpha, const Dtype* x, Dtype* y) {
  if (n == 0) return true;
  int* flag = static_cast<int*>(gpu.allocator().Allocate(sizeof(int)));
  int non_finite = 0;
  try {
    DOPPIO_CUDA_CHECK(cudaMemsetAsync(flag, 0, sizeof(int), gpu.stream()));
    LaunchKernel("AxpyFiniteKernel", gpu, static_cast<long long>(n), AxpyFiniteKernel<Dtype>,
                 static_cast<long long>(n), alpha, x, y, flag);
    DOPPIO_CUDA_CHECK(
        cudaMemcpyAsync(&non_finite, flag, sizeof(int), cudaMemcpyDeviceToHost, gpu.stream()));
    DOPPIO_CUDA_CHECK(cudaStreamSynchronize(gpu.stream()));
  } catch (...) {
    gpu.allocator().Free(flag);
    throw;
  }
  gpu.allocator().Free(flag);
  return non_finite == 0;
}

template <typename Dtype>
void gpu_axpby(GpuContext& gpu, int n, Dtype alpha, const Dtype* x, Dtype beta, Dtype* y) {
  LaunchKernel("AxpbyKernel", gpu, n, AxpbyKernel<Dtype>, static_cast<long long>(n), alpha, x, beta,
               y);
}

template <typename Dtype>
void gpu_scal(GpuContext& gpu, int n, Dtype alpha, Dtype* x) {
  if (n <= 0) return;
  DOPPIO_CUBLAS_CHECK(Cublas<Dtype>::scal(gpu.cublas(), n, &alpha, x));
}

template <typename Dtype>
void gpu_scale(GpuContext& gpu, int n, Dtype alpha, const Dtype* x, Dtype* y) {
  LaunchKernel("ScaleKernel", gpu, n, ScaleKernel<Dtype>, static_cast<long long>(n), alpha, x, y);
}

template <typename Dtype>
void gpu_copy(GpuContext& gpu, int n, const Dtype* x, Dtype* y) {
  if (n <= 0 || x == y) return;
  DOPPIO_CUDA_CHECK(cudaMemcpyAsync(y, x, sizeof(Dtype) * static_cast<std::size_t>(n),
                                    cudaMemcpyDeviceToDevice, gpu.stream()));
}

template <typename Dtype>
void gpu_set(GpuContext& gpu, int n, Dtype value, Dtype* y) {
  if (n <= 0) return;
  if (value == Dtype(0)) {
    DOPPIO_CUDA_CHECK(
        cudaMemsetAsync(y, 0, sizeof(Dtype) * static_cast<std::size_t>(n), gpu.stream()));
    return;
  }
  LaunchKernel("SetKernel", gpu, n, SetKernel<Dtype>, static_cast<long long>(n), value, y);
}

template <typename Dtype>
Dtype gpu_dot(GpuContext& gpu, int n, const Dtype* x, const Dtype* y) {
  if (n <= 0) return Dtype(0);
  Dtype result = 0;
  DOPPIO_CUBLAS_CHECK(Cublas<Dtype>::dot(gpu.cublas(), n, x, y, &result));
  return result;
}

template <typename Dtype>
Dtype gpu_asum(GpuContext& gpu, int n, const Dtype* x) {
  if (n <= 0) return Dtype(0);
  Dtype result = 0;
  DOPPIO_CUBLAS_CHECK(Cublas<Dtype>::asum(gpu.cublas(), n, x, &result));
  return result;
}

template <typename Dtype>
Dtype gpu_sum(GpuContext& gpu, int n, const Dtype* x) {
  if (n <= 0) return Dtype(0);
  const int blocks = std::min(GpuBlocks(n), kSumBlocks);
  Dtype* partial = static_cast<Dtype*>(gpu.allocator().Allocate(sizeof(Dtype) * blocks));
  std::vector<Dtype> host(blocks);
  try {
    DOPPIO_LAUNCH(PartialSumKernel<Dtype>, blocks, kGpuThreads, gpu.stream())(n, x, partial);
    DOPPIO_CUDA_POST_KERNEL_CHECK("PartialSumKernel");
    DOPPIO_CUDA_CHECK(cudaMemcpyAsync(host.data(), partial, sizeof(Dtype) * blocks,
                                      cudaMemcpyDeviceToHost, gpu.stream()));
    DOPPIO_CUDA_CHECK(cudaStreamSynchronize(gpu.stream()));
  } catch (...) {
    gpu.allocator().Free(partial);
    throw;
  }
  gpu.allocator().Free(partial);
  Dtype sum = 0;
  for (Dtype value : host) sum += value;
  return sum;
}

template <typename Dtype>
void gpu_add(GpuContext& gpu, int n, const Dtype* a, const Dtype* b, Dtype* y) {
  LaunchKernel("BinaryKernel<add>", gpu, n, BinaryKernel<Dtype, BinaryOp::kAdd>,
               static_cast<long long>(n), a, b, y);
}
template <typename Dtype>
void gpu_sub(GpuContext& gpu, int n, const Dtype* a, const Dtype* b, Dtype* y) {
  LaunchKernel("BinaryKernel<sub>", gpu, n, BinaryKernel<Dtype, BinaryOp::kSub>,
               static_cast<long long>(n), a, b, y);
}
template <typename Dtype>
void gpu_mul(GpuContext& gpu, int n, const Dtype* a, const Dtype* b, Dtype* y) {
  LaunchKernel("BinaryKernel<mul>", gpu, n, BinaryKernel<Dtype, BinaryOp::kMul>,
               static_cast<long long>(n), a, b, y);
}
template <typename Dtype>
void gpu_div(GpuContext& gpu, int n, const Dtype* a, const Dtype* b, Dtype* y) {
  LaunchKernel("BinaryKernel<div>", gpu, n, BinaryKernel<Dtype, BinaryOp::kDiv>,
               static_cast<long long>(n), a, b, y);
}

template <typename Dtype>
void gpu_add_scalar(GpuContext& gpu, int n, Dtype alpha, Dtype* y) {
  LaunchKernel("AddScalarKernel", gpu, n, AddScalarKernel<Dtype>, static_cast<long long>(n), alpha,
               y);
}

template <typename Dtype>
void gpu_powx(GpuContext& gpu, int n, const Dtype* a, Dtype b, Dtype* y) {
  LaunchKernel("PowxKernel", gpu, n, PowxKernel<Dtype>, static_cast<long long>(n), a, b, y);
}

template <typename Dtype>
void gpu_sqr(GpuContext& gpu, int n, const Dtype* a, Dtype* y) {
  LaunchKernel("UnaryKernel<sqr>", gpu, n, UnaryKernel<Dtype, UnaryOp::kSqr>,
               static_cast<long long>(n), a, y);
}
template <typename Dtype>
void gpu_sqrt(GpuContext& gpu, int n, const Dtype* a, Dtype* y) {
  LaunchKernel("UnaryKernel<sqrt>", gpu, n, UnaryKernel<Dtype, UnaryOp::kSqrt>,
               static_cast<long long>(n), a, y);
}
template <typename Dtype>
void gpu_exp(GpuContext& gpu, int n, const Dtype* a, Dtype* y) {
  LaunchKernel("UnaryKernel<exp>", gpu, n, UnaryKernel<Dtype, UnaryOp::kExp>,
               static_cast<long long>(n), a, y);
}
template <typename Dtype>
void gpu_log(GpuContext& gpu, int n, const Dtype* a, Dtype* y) {
  LaunchKernel("UnaryKernel<log>", gpu, n, UnaryKernel<Dtype, UnaryOp::kLog>,
               static_cast<long long>(n), a, y);
}
template <typename Dtype>
void gpu_abs(GpuContext& gpu, int n, const Dtype* a, Dtype* y) {
  LaunchKernel("UnaryKernel<abs>", gpu, n, UnaryKernel<Dtype, UnaryOp::kAbs>,
               static_cast<long long>(n), a, y);
}
template <typename Dtype>
void gpu_sign(GpuContext& gpu, int n, const Dtype* a, Dtype* y) {
  LaunchKernel("UnaryKernel<sign>", gpu, n, UnaryKernel<Dtype, UnaryOp::kSign>,
               static_cast<long long>(n), a, y);
}

template <typename Dtype>
void gpu_rng_uniform(GpuContext& gpu, int n, Dtype a, Dtype b, std::uint64_t seed, Dtype* r) {
  CHECK_LE(a, b);
  LaunchKernel("UniformKernel", gpu, n, UniformKernel<Dtype>, static_cast<long long>(n), a, b,
               static_cast<unsigned long long>(seed), r);
}

template <typename Dtype>
void gpu_rng_gaussian(GpuContext& gpu, int n, Dtype mean, Dtype stddev, std::uint64_t seed,
                      Dtype* r) {
  CHECK_GT(stddev, 0);
  LaunchKernel("GaussianKernel", gpu, n, GaussianKernel<Dtype>, static_cast<long long>(n), mean,
               stddev, static_cast<unsigned long long>(seed), r);
}

template <typename Dtype>
void gpu_rng_bernoulli(GpuContext& gpu, int n, Dtype p, std::uint64_t seed, unsigned int* r) {
  CHECK_GE(p, 0);
  CHECK_LE(p, 1);
  LaunchKernel("BernoulliKernel", gpu, n, BernoulliKernel<Dtype>, static_cast<long long>(n), p,
               static_cast<unsigned long long>(seed), r);
}

template <typename Dtype>
void gpu_rng_uniform(GpuContext& gpu, int n, Dtype a, Dtype b, Rng& rng, Dtype* r) {
  gpu_rng_uniform(gpu, n, a, b, static_cast<std::uint64_t>(rng.engine()()), r);
}
template <typename Dtype>
void gpu_rng_gaussian(GpuContext& gpu, int n, Dtype mean, Dtype stddev, Rng& rng, Dtype* r) {
  gpu_rng_gaussian(gpu, n, mean, stddev, static_cast<std::uint64_t>(rng.engine()()), r);
}
template <typename Dtype>
void gpu_rng_bernoulli(GpuContext& gpu, int n, Dtype p, Rng& rng, unsigned int* r) {
  gpu_rng_bernoulli(gpu, n, p, static_cast<std::uint64_t>(rng.engine()()), r);
}

#define DOPPIO_INSTANTIATE_GPU_MATH(Dtype)                                                        \
  template void gpu_gemm<Dtype>(GpuContext&, Trans, Trans, int, int, int, Dtype, const Dtype*,    \
                                const Dtype*, Dtype, Dtype*);                                     \
  template void gpu_gemm_strided_batched<Dtype>(GpuContext&, Trans, Trans, int, int, int, Dtype,  \
                                                const Dtype*, long long, const Dtype*, long long, \
                                                Dtype, Dtype*, long long, int);                   \
  template void gpu_gemv<Dtype>(GpuContext&, Trans, int, int, Dtype, const Dtype*, const Dtype*,  \
                                Dtype, Dtype*);                                                   \
  template void gpu_axpy<Dtype>(GpuContext&, int, Dtype, const Dtype*, Dtype*);                   \
  template bool gpu_axpy_finite<Dtype>(GpuContext&, std::size_t, Dtype, const Dtype*, Dtype*);    \
  template void gpu_axpby<Dtype>(GpuContext&, int, Dtype, const Dtype*, Dtype, Dtype*);           \
  template void gpu_scal<Dtype>(GpuContext&, int, Dtype, Dtype*);                                 \
  template void gpu_scale<Dtype>(GpuContext&, int, Dtype, const Dtype*, Dtype*);                  \
  template void gpu_copy<Dtype>(GpuContext&, int, const Dtype*, Dtype*);                          \
  template void gpu_set<Dtype>(GpuContext&, int, Dtype, Dtype*);                                  \
  template Dtype gpu_dot<Dtype>(GpuContext&, int, const Dtype*, const Dtype*);                    \
  template Dtype gpu_asum<Dtype>(GpuContext&, int, const Dtype*);                                 \
  template Dtype gpu_sum<Dtype>(GpuContext&, int, const Dtype*);                                  \
  template void gpu_add<Dtype>(GpuContext&, int, const Dtype*, const Dtype*, Dtype*);             \
  template void gpu_sub<Dtype>(GpuContext&, int, const Dtype*, const Dtype*, Dtype*);             \
  template void gpu_mul<Dtype>(GpuContext&, int, const Dtype*, const Dtype*, Dtype*);             \
  template void gpu_div<Dtype>(GpuContext&, int, const Dtype*, const Dtype*, Dtype*);             \
  template void gpu_add_scalar<Dtype>(GpuContext&, int, Dtype, Dtype*);                           \
  template void gpu_powx<Dtype>(GpuContext&, int, const Dtype*, Dtype, Dtype*);                   \
  template void gpu_sqr<Dtype>(GpuContext&, int, const Dtype*, Dtype*);                           \
  template void gpu_sqrt<Dtype>(GpuContext&, int, const Dtype*, Dtype*);                          \
  template void gpu_exp<Dtype>(GpuContext&, int, const Dtype*, Dtype*);                           \
  template void gpu_log<Dtype>(GpuContext&, int, const Dtype*, Dtype*);                           \
  template void gpu_abs<Dtype>(GpuContext&, int, const Dtype*, Dtype*);                           \
  template void gpu_sign<Dtype>(GpuContext&, int, const Dtype*, Dtype*);                          \
  template void gpu_rng_uniform<Dtype>(GpuContext&, int, Dtype, Dtype, std::uint64_t, Dtype*);    \
  template void gpu_rng_gaussian<Dtype>(GpuContext&, int, Dtype, Dtype, std::uint64_t, Dtype*);   \
  template void gpu_rng_bernoulli<Dtype>(GpuContext&, int, Dtype, std::uint64_t, unsigned int*);  \
  template void gpu_rng_uniform<Dtype>(GpuContext&, int, Dtype, Dtype, Rng&, Dtype*);             \
  template void gpu_rng_gaussian<Dtype>(GpuContext&, int, Dtype, Dtype, Rng&, Dtype*);            \
  template void gpu_rng_bernoulli<Dtype>(GpuContext&, int, Dtype, Rng&, unsigned int*);

DOPPIO_INSTANTIATE_GPU_MATH(float)
DOPPIO_INSTANTIATE_GPU_MATH(double)
// Integer masks and indices are copied and cleared too.
template void gpu_copy<int>(GpuContext&, int, const int*, int*);
template void gpu_set<int>(GpuContext&, int, int, int*);
template void gpu_copy<unsigned int>(GpuContext&, int, const unsigned int*, unsigned int*);
template void gpu_set<unsigned int>(GpuContext&, int, unsigned int, unsigned int*);

}  // namespace doppio
