// The emulated cuBLAS: the column-major calls computed by the CPU BLAS, after the checks
// cuBLAS makes (sizes, leading dimensions) and one it cannot make: that every operand lies
// inside one device allocation, which catches a wrong leading dimension or transpose
// before it reads past a buffer.
#include <cblas.h>

#include <algorithm>
#include <cstdio>
#include <mutex>
#include <new>
#include <string>
#include <unordered_set>
#include <vector>

#include "cublas_v2.h"
#include "device_arena.hpp"
#include "doppio/util/half.hpp"
#include "runtime_state.hpp"

struct DoppioEmulatedCublas {
  cudaStream_t stream;
  cublasPointerMode_t pointer_mode;
};

namespace {

std::mutex handles_mutex;
std::unordered_set<const void*>& Handles() {
  static auto* handles = new std::unordered_set<const void*>();
  return *handles;
}

bool IsHandle(cublasHandle_t handle) {
  std::lock_guard<std::mutex> lock(handles_mutex);
  return Handles().count(handle) > 0;
}

cublasStatus_t Invalid(const char* call, const std::string& why) {
  std::fprintf(stderr, "CUDA emulation: %s: %s\n", call, why.c_str());
  return CUBLAS_STATUS_INVALID_VALUE;
}

// Elements spanned by a column-major rows x cols matrix with leading dimension ld.
size_t MatrixSpan(int rows, int cols, int ld) {
  if (rows == 0 || cols == 0) return 0;
  return static_cast<size_t>(ld) * (cols - 1) + rows;
}

size_t VectorSpan(int n, int inc) { return n == 0 ? 0 : static_cast<size_t>(inc) * (n - 1) + 1; }

template <typename T>
bool OnDevice(const T* pointer, size_t elements) {
  return elements == 0 || doppio_emulation::IsDeviceRange(pointer, elements * sizeof(T));
}

template <typename T>
cublasStatus_t CheckScalars(cublasHandle_t handle, const char* call, const T* a, const T* b) {
  if (!IsHandle(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (handle->pointer_mode != CUBLAS_POINTER_MODE_HOST) {
    return Invalid(call, "the emulation supports host pointer mode only");
  }
  if (doppio_emulation::IsDeviceAddress(a) || (b && doppio_emulation::IsDeviceAddress(b))) {
    return Invalid(call, "a scalar is device memory but the pointer mode is host");
  }
  if (!doppio_emulation::IsValidStream(handle->stream)) {
    return Invalid(call, "the handle's stream was destroyed");
  }
  return CUBLAS_STATUS_SUCCESS;
}

CBLAS_TRANSPOSE Trans(cublasOperation_t op) {
  return op == CUBLAS_OP_N ? CblasNoTrans : CblasTrans;
}

template <typename T>
cublasStatus_t Gemm(const char* call, cublasHandle_t handle, cublasOperation_t ta,
                    cublasOperation_t tb, int m, int n, int k, const T* alpha, const T* a, int lda,
                    const T* b, int ldb, const T* beta, T* c, int ldc) {
  const cublasStatus_t status = CheckScalars(handle, call, alpha, beta);
  if (status != CUBLAS_STATUS_SUCCESS) return status;
  const int a_rows = ta == CUBLAS_OP_N ? m : k, a_cols = ta == CUBLAS_OP_N ? k : m;
  const int b_rows = tb == CUBLAS_OP_N ? k : n, b_cols = tb == CUBLAS_OP_N ? n : k;
  if (m < 0 || n < 0 || k < 0) return Invalid(call, "negative size");
  if (lda < std::max(1, a_rows) || ldb < std::max(1, b_rows) || ldc < std::max(1, m)) {
    return Invalid(call, "m " + std::to_string(m) + " n " + std::to_string(n) + " k " +
                             std::to_string(k) + ": lda " + std::to_string(lda) + " ldb " +
                             std::to_string(ldb) + " ldc " + std::to_string(ldc) +
                             " below the rows of op(A), op(B) or C");
  }
  if (m == 0 || n == 0) return CUBLAS_STATUS_SUCCESS;
  if ((k > 0 && (!OnDevice(a, MatrixSpan(a_rows, a_cols, lda)) ||
                 !OnDevice(b, MatrixSpan(b_rows, b_cols, ldb)))) ||
      !OnDevice(c, MatrixSpan(m, n, ldc))) {
    return Invalid(call, "an operand reaches outside its device allocation (m " +
                             std::to_string(m) + " n " + std::to_string(n) + " k " +
                             std::to_string(k) + ")");
  }
  const T alpha_value = *alpha, beta_value = *beta;  // host pointer mode reads them now
  doppio_emulation::Enqueue(handle->stream, [=] {
    if (k == 0) {
      for (int j = 0; j < n; ++j)
        for (int i = 0; i < m; ++i) {
          T& x = c[static_cast<size_t>(j) * ldc + i];
          x = beta_value == T(0) ? T(0) : beta_value * x;
        }
    } else if constexpr (sizeof(T) == 4) {
      cblas_sgemm(CblasColMajor, Trans(ta), Trans(tb), m, n, k, alpha_value, a, lda, b, ldb,
                  beta_value, c, ldc);
    } else {
      cblas_dgemm(CblasColMajor, Trans(ta), Trans(tb), m, n, k, alpha_value, a, lda, b, ldb,
                  beta_value, c, ldc);
    }
  });
  return CUBLAS_STATUS_SUCCESS;
}

template <typename T>
cublasStatus_t GemmStrided(const char* call, cublasHandle_t handle, cublasOperation_t ta,
                           cublasOperation_t tb, int m, int n, int k, const T* alpha, const T* a,
                           int lda, long long sa, const T* b, int ldb, long long sb, const T* beta,
                           T* c, int ldc, long long sc, int batches) {
  if (batches < 0) return Invalid(call, "negative batch count");
  for (int i = 0; i < batches; ++i) {
    const cublasStatus_t status = Gemm(call, handle, ta, tb, m, n, k, alpha, a + i * sa, lda,
                                       b + i * sb, ldb, beta, c + i * sc, ldc);
    if (status != CUBLAS_STATUS_SUCCESS) return status;
  }
  return CUBLAS_STATUS_SUCCESS;
}

template <typename T>
cublasStatus_t Gemv(const char* call, cublasHandle_t handle, cublasOperation_t trans, int m, int n,
                    const T* alpha, const T* a, int lda, const T* x, int incx, const T* beta, T* y,
                    int incy) {
  const cublasStatus_t status = CheckScalars(handle, call, alpha, beta);
  if (status != CUBLAS_STATUS_SUCCESS) return status;
  if (m < 0 || n < 0 || lda < std::max(1, m) || incx == 0 || incy == 0) {
    return Invalid(
        call, "m " + std::to_string(m) + " n " + std::to_string(n) + " lda " + std::to_string(lda));
  }
  if (incx < 0 || incy < 0) return Invalid(call, "the emulation takes positive increments");
  const int x_n = trans == CUBLAS_OP_N ? n : m, y_n = trans == CUBLAS_OP_N ? m : n;
  if (m == 0 || n == 0) return CUBLAS_STATUS_SUCCESS;
  if (!OnDevice(a, MatrixSpan(m, n, lda)) || !OnDevice(x, VectorSpan(x_n, incx)) ||
      !OnDevice(y, VectorSpan(y_n, incy))) {
    return Invalid(call, "an operand reaches outside its device allocation (m " +
                             std::to_string(m) + " n " + std::to_string(n) + ")");
  }
  const T alpha_value = *alpha, beta_value = *beta;
  doppio_emulation::Enqueue(handle->stream, [=] {
    if constexpr (sizeof(T) == 4) {
      cblas_sgemv(CblasColMajor, Trans(trans), m, n, alpha_value, a, lda, x, incx, beta_value, y,
                  incy);
    } else {
      cblas_dgemv(CblasColMajor, Trans(trans), m, n, alpha_value, a, lda, x, incx, beta_value, y,
                  incy);
    }
  });
  return CUBLAS_STATUS_SUCCESS;
}

// Checks a level-1 call's vectors; `result` (host, or null) receives a scalar.
template <typename T>
cublasStatus_t CheckLevel1(const char* call, cublasHandle_t handle, int n, const T* x, int incx,
                           const T* y, int incy, const T* scalar) {
  const cublasStatus_t status = CheckScalars(handle, call, scalar, static_cast<const T*>(nullptr));
  if (status != CUBLAS_STATUS_SUCCESS) return status;
  if (n < 0) return Invalid(call, "negative n");
  if (incx <= 0 || (y && incy <= 0))
    return Invalid(call, "the emulation takes positive increments");
  if (!OnDevice(x, VectorSpan(n, incx)) || (y && !OnDevice(y, VectorSpan(n, incy)))) {
    return Invalid(call,
                   "a vector of " + std::to_string(n) + " reaches outside its device allocation");
  }
  return CUBLAS_STATUS_SUCCESS;
}

template <typename T>
cublasStatus_t Axpy(const char* call, cublasHandle_t handle, int n, const T* alpha, const T* x,
                    int incx, T* y, int incy) {
  const cublasStatus_t status = CheckLevel1(call, handle, n, x, incx, y, incy, alpha);
  if (status != CUBLAS_STATUS_SUCCESS) return status;
  const T alpha_value = *alpha;
  doppio_emulation::Enqueue(handle->stream, [=] {
    if constexpr (sizeof(T) == 4) {
      cblas_saxpy(n, alpha_value, x, incx, y, incy);
    } else {
      cblas_daxpy(n, alpha_value, x, incx, y, incy);
    }
  });
  return CUBLAS_STATUS_SUCCESS;
}

template <typename T>
cublasStatus_t Scal(const char* call, cublasHandle_t handle, int n, const T* alpha, T* x,
                    int incx) {
  const cublasStatus_t status =
      CheckLevel1(call, handle, n, x, incx, static_cast<const T*>(nullptr), 1, alpha);
  if (status != CUBLAS_STATUS_SUCCESS) return status;
  const T alpha_value = *alpha;
  doppio_emulation::Enqueue(handle->stream, [=] {
    if constexpr (sizeof(T) == 4) {
      cblas_sscal(n, alpha_value, x, incx);
    } else {
      cblas_dscal(n, alpha_value, x, incx);
    }
  });
  return CUBLAS_STATUS_SUCCESS;
}

// x . y, or the sum of |x| when y is null, into a host result: the call waits for the work
// queued on the stream before it, and for its own.
template <typename T>
cublasStatus_t Dot(const char* call, cublasHandle_t handle, int n, const T* x, int incx, const T* y,
                   int incy, T* result) {
  const cublasStatus_t status = CheckLevel1(call, handle, n, x, incx, y, incy, result);
  if (status != CUBLAS_STATUS_SUCCESS) return status;
  doppio_emulation::RunStream(handle->stream);
  doppio_emulation::DeviceAccess access;
  if constexpr (sizeof(T) == 4) {
    *result = y ? cblas_sdot(n, x, incx, y, incy) : cblas_sasum(n, x, incx);
  } else {
    *result = y ? cblas_ddot(n, x, incx, y, incy) : cblas_dasum(n, x, incx);
  }
  return CUBLAS_STATUS_SUCCESS;
}

}  // namespace

cublasStatus_t cublasCreate(cublasHandle_t* handle) {
  *handle = new (std::nothrow) DoppioEmulatedCublas{nullptr, CUBLAS_POINTER_MODE_HOST};
  if (*handle == nullptr) return CUBLAS_STATUS_ALLOC_FAILED;
  std::lock_guard<std::mutex> lock(handles_mutex);
  Handles().insert(*handle);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasDestroy(cublasHandle_t handle) {
  {
    std::lock_guard<std::mutex> lock(handles_mutex);
    if (Handles().erase(handle) == 0) return CUBLAS_STATUS_NOT_INITIALIZED;
  }
  delete handle;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetStream(cublasHandle_t handle, cudaStream_t stream) {
  if (!IsHandle(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (!doppio_emulation::IsValidStream(stream)) return Invalid("cublasSetStream", "bad stream");
  handle->stream = stream;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetPointerMode(cublasHandle_t handle, cublasPointerMode_t mode) {
  if (!IsHandle(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  handle->pointer_mode = mode;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode) {
  if (!IsHandle(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  (void)mode;  // the CPU BLAS computes in full precision either way
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSgemm(cublasHandle_t handle, cublasOperation_t transa,
                           cublasOperation_t transb, int m, int n, int k, const float* alpha,
                           const float* a, int lda, const float* b, int ldb, const float* beta,
                           float* c, int ldc) {
  return Gemm("cublasSgemm", handle, transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

cublasStatus_t cublasDgemm(cublasHandle_t handle, cublasOperation_t transa,
                           cublasOperation_t transb, int m, int n, int k, const double* alpha,
                           const double* a, int lda, const double* b, int ldb, const double* beta,
                           double* c, int ldc) {
  return Gemm("cublasDgemm", handle, transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t handle, cublasOperation_t transa,
                                         cublasOperation_t transb, int m, int n, int k,
                                         const float* alpha, const float* a, int lda,
                                         long long stride_a, const float* b, int ldb,
                                         long long stride_b, const float* beta, float* c, int ldc,
                                         long long stride_c, int batches) {
  return GemmStrided("cublasSgemmStridedBatched", handle, transa, transb, m, n, k, alpha, a, lda,
                     stride_a, b, ldb, stride_b, beta, c, ldc, stride_c, batches);
}

cublasStatus_t cublasDgemmStridedBatched(cublasHandle_t handle, cublasOperation_t transa,
                                         cublasOperation_t transb, int m, int n, int k,
                                         const double* alpha, const double* a, int lda,
                                         long long stride_a, const double* b, int ldb,
                                         long long stride_b, const double* beta, double* c, int ldc,
                                         long long stride_c, int batches) {
  return GemmStrided("cublasDgemmStridedBatched", handle, transa, transb, m, n, k, alpha, a, lda,
                     stride_a, b, ldb, stride_b, beta, c, ldc, stride_c, batches);
}

namespace {
size_t TypeBytes(cudaDataType type) { return type == CUDA_R_32F ? 4 : 2; }

// The first `elements` values at `data`, held as `type`, in float.
std::vector<float> Widen(const void* data, cudaDataType type, size_t elements) {
  std::vector<float> out(elements);
  for (size_t i = 0; i < elements; ++i) {
    if (type == CUDA_R_32F) {
      out[i] = static_cast<const float*>(data)[i];
    } else {
      const std::uint16_t bits = static_cast<const std::uint16_t*>(data)[i];
      out[i] = type == CUDA_R_16F ? doppio::HalfToFloat(bits) : doppio::Bfloat16ToFloat(bits);
    }
  }
  return out;
}
}  // namespace

cublasStatus_t cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa,
                            cublasOperation_t transb, int m, int n, int k, const void* alpha,
                            const void* a, cudaDataType a_type, int lda, const void* b,
                            cudaDataType b_type, int ldb, const void* beta, void* c,
                            cudaDataType c_type, int ldc, cublasComputeType_t compute,
                            cublasGemmAlgo_t algo) {
  const char* call = "cublasGemmEx";
  const auto* alpha_f = static_cast<const float*>(alpha);
  const auto* beta_f = static_cast<const float*>(beta);
  const cublasStatus_t status = CheckScalars(handle, call, alpha_f, beta_f);
  if (status != CUBLAS_STATUS_SUCCESS) return status;
  if (compute != CUBLAS_COMPUTE_32F || algo != CUBLAS_GEMM_DEFAULT) {
    return Invalid(call, "the emulation computes in CUBLAS_COMPUTE_32F with the default algorithm");
  }
  if (a_type != b_type || (c_type != CUDA_R_32F && c_type != a_type)) {
    return Invalid(call, "A and B must have one type, C fp32 or that type");
  }
  const int a_rows = transa == CUBLAS_OP_N ? m : k, a_cols = transa == CUBLAS_OP_N ? k : m;
  const int b_rows = transb == CUBLAS_OP_N ? k : n, b_cols = transb == CUBLAS_OP_N ? n : k;
  if (m < 0 || n < 0 || k <= 0) return Invalid(call, "m, n negative or k not positive");
  if (lda < std::max(1, a_rows) || ldb < std::max(1, b_rows) || ldc < std::max(1, m)) {
    return Invalid(call, "a leading dimension below the rows of op(A), op(B) or C");
  }
  if (m == 0 || n == 0) return CUBLAS_STATUS_SUCCESS;
  const size_t a_span = MatrixSpan(a_rows, a_cols, lda), b_span = MatrixSpan(b_rows, b_cols, ldb);
  const size_t c_span = MatrixSpan(m, n, ldc);
  if (!doppio_emulation::IsDeviceRange(a, a_span * TypeBytes(a_type)) ||
      !doppio_emulation::IsDeviceRange(b, b_span * TypeBytes(b_type)) ||
      !doppio_emulation::IsDeviceRange(c, c_span * TypeBytes(c_type))) {
    return Invalid(call, "an operand reaches outside its device allocation (m " +
                             std::to_string(m) + " n " + std::to_string(n) + " k " +
                             std::to_string(k) + ")");
  }
  const float alpha_value = *alpha_f, beta_value = *beta_f;
  doppio_emulation::Enqueue(handle->stream, [=] {
    const std::vector<float> wa = Widen(a, a_type, a_span), wb = Widen(b, b_type, b_span);
    std::vector<float> wc = Widen(c, c_type, c_span);
    cblas_sgemm(CblasColMajor, Trans(transa), Trans(transb), m, n, k, alpha_value, wa.data(), lda,
                wb.data(), ldb, beta_value, wc.data(), ldc);
    for (size_t i = 0; i < c_span; ++i) {
      if (c_type == CUDA_R_32F) {
        static_cast<float*>(c)[i] = wc[i];
      } else {
        static_cast<std::uint16_t*>(c)[i] =
            c_type == CUDA_R_16F ? doppio::FloatToHalf(wc[i]) : doppio::FloatToBfloat16(wc[i]);
      }
    }
  });
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSgemv(cublasHandle_t handle, cublasOperation_t trans, int m, int n,
                           const float* alpha, const float* a, int lda, const float* x, int incx,
                           const float* beta, float* y, int incy) {
  return Gemv("cublasSgemv", handle, trans, m, n, alpha, a, lda, x, incx, beta, y, incy);
}

cublasStatus_t cublasDgemv(cublasHandle_t handle, cublasOperation_t trans, int m, int n,
                           const double* alpha, const double* a, int lda, const double* x, int incx,
                           const double* beta, double* y, int incy) {
  return Gemv("cublasDgemv", handle, trans, m, n, alpha, a, lda, x, incx, beta, y, incy);
}

cublasStatus_t cublasSaxpy(cublasHandle_t handle, int n, const float* alpha, const float* x,
                           int incx, float* y, int incy) {
  return Axpy("cublasSaxpy", handle, n, alpha, x, incx, y, incy);
}

cublasStatus_t cublasDaxpy(cublasHandle_t handle, int n, const double* alpha, const double* x,
                           int incx, double* y, int incy) {
  return Axpy("cublasDaxpy", handle, n, alpha, x, incx, y, incy);
}

cublasStatus_t cublasSscal(cublasHandle_t handle, int n, const float* alpha, float* x, int incx) {
  return Scal("cublasSscal", handle, n, alpha, x, incx);
}

cublasStatus_t cublasDscal(cublasHandle_t handle, int n, const double* alpha, double* x, int incx) {
  return Scal("cublasDscal", handle, n, alpha, x, incx);
}

cublasStatus_t cublasSdot(cublasHandle_t handle, int n, const float* x, int incx, const float* y,
                          int incy, float* result) {
  return Dot("cublasSdot", handle, n, x, incx, y, incy, result);
}

cublasStatus_t cublasDdot(cublasHandle_t handle, int n, const double* x, int incx, const double* y,
                          int incy, double* result) {
  return Dot("cublasDdot", handle, n, x, incx, y, incy, result);
}

cublasStatus_t cublasSasum(cublasHandle_t handle, int n, const float* x, int incx, float* result) {
  return Dot("cublasSasum", handle, n, x, incx, static_cast<const float*>(nullptr), 1, result);
}

cublasStatus_t cublasDasum(cublasHandle_t handle, int n, const double* x, int incx,
                           double* result) {
  return Dot("cublasDasum", handle, n, x, incx, static_cast<const double*>(nullptr), 1, result);
}
