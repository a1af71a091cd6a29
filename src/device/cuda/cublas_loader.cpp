// cuBLAS, loaded the first time it is called (real CUDA builds only; the emulation links its
// own, tests/cuda_emulation/).
//
// Why: a process linked against libcublas pays about 0.6 s of CPU at start-up, GPU or not,
// for libcublasLt's static initialisers and page faults over its 540 MB. Every `doppio`
// command, every CPU-only run and every test process paid it (it was most of the CUDA build's
// ctest time). So libdoppio defines the cuBLAS entry points it calls, as cublas_v2.h declares
// them, and each forwards to the real one, found in the library opened here on first use.
// The lookups go through the handle dlopen returns, so they find cuBLAS's own definitions and
// never these.
#include <cublas_v2.h>
#include <dlfcn.h>

#include <string>

#include "doppio/util/error.hpp"

namespace doppio {
namespace {

void* CublasLibrary() {
  static void* const library = [] {
    const std::string name = "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR);
    void* handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* reason = dlerror();
      DOPPIO_FAIL() << "cannot load cuBLAS (" << name
                    << "), which the GPU path needs: " << (reason ? reason : "unknown reason");
    }
    return handle;
  }();
  return library;
}

template <typename Function>
Function* Resolve(const char* name) {
  void* symbol = dlsym(CublasLibrary(), name);
  DOPPIO_ENSURE(symbol != nullptr) << "cuBLAS " << CUBLAS_VER_MAJOR << " has no " << name
                                   << ": the cuBLAS found at run time is not the one "
                                      "Doppio was built against";
  return reinterpret_cast<Function*>(symbol);
}

}  // namespace
}  // namespace doppio

#define DOPPIO_CUBLAS_FORWARD(name, params, args)                               \
  extern "C" cublasStatus_t CUBLASWINAPI name params {                          \
    static decltype(&name) const real = doppio::Resolve<decltype(name)>(#name); \
    return real args;                                                           \
  }

DOPPIO_CUBLAS_FORWARD(cublasCreate_v2, (cublasHandle_t * handle), (handle))
DOPPIO_CUBLAS_FORWARD(cublasDestroy_v2, (cublasHandle_t handle), (handle))
DOPPIO_CUBLAS_FORWARD(cublasSetStream_v2, (cublasHandle_t handle, cudaStream_t stream),
                      (handle, stream))
DOPPIO_CUBLAS_FORWARD(cublasSetPointerMode_v2, (cublasHandle_t handle, cublasPointerMode_t mode),
                      (handle, mode))
DOPPIO_CUBLAS_FORWARD(cublasSetMathMode, (cublasHandle_t handle, cublasMath_t mode), (handle, mode))

DOPPIO_CUBLAS_FORWARD(cublasSgemm_v2,
                      (cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                       int k, const float* alpha, const float* a, int lda, const float* b, int ldb,
                       const float* beta, float* c, int ldc),
                      (h, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc))
DOPPIO_CUBLAS_FORWARD(cublasDgemm_v2,
                      (cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                       int k, const double* alpha, const double* a, int lda, const double* b,
                       int ldb, const double* beta, double* c, int ldc),
                      (h, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc))
DOPPIO_CUBLAS_FORWARD(cublasSgemmStridedBatched,
                      (cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                       int k, const float* alpha, const float* a, int lda, long long int sa,
                       const float* b, int ldb, long long int sb, const float* beta, float* c,
                       int ldc, long long int sc, int batches),
                      (h, ta, tb, m, n, k, alpha, a, lda, sa, b, ldb, sb, beta, c, ldc, sc,
                       batches))
DOPPIO_CUBLAS_FORWARD(cublasDgemmStridedBatched,
                      (cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                       int k, const double* alpha, const double* a, int lda, long long int sa,
                       const double* b, int ldb, long long int sb, const double* beta, double* c,
                       int ldc, long long int sc, int batches),
                      (h, ta, tb, m, n, k, alpha, a, lda, sa, b, ldb, sb, beta, c, ldc, sc,
                       batches))
DOPPIO_CUBLAS_FORWARD(cublasSgemv_v2,
                      (cublasHandle_t h, cublasOperation_t t, int m, int n, const float* alpha,
                       const float* a, int lda, const float* x, int incx, const float* beta,
                       float* y, int incy),
                      (h, t, m, n, alpha, a, lda, x, incx, beta, y, incy))
DOPPIO_CUBLAS_FORWARD(cublasDgemv_v2,
                      (cublasHandle_t h, cublasOperation_t t, int m, int n, const double* alpha,
                       const double* a, int lda, const double* x, int incx, const double* beta,
                       double* y, int incy),
                      (h, t, m, n, alpha, a, lda, x, incx, beta, y, incy))
DOPPIO_CUBLAS_FORWARD(cublasSaxpy_v2,
                      (cublasHandle_t h, int n, const float* alpha, const float* x, int incx,
                       float* y, int incy),
                      (h, n, alpha, x, incx, y, incy))
DOPPIO_CUBLAS_FORWARD(cublasDaxpy_v2,
                      (cublasHandle_t h, int n, const double* alpha, const double* x, int incx,
                       double* y, int incy),
                      (h, n, alpha, x, incx, y, incy))
DOPPIO_CUBLAS_FORWARD(cublasSscal_v2,
                      (cublasHandle_t h, int n, const float* alpha, float* x, int incx),
                      (h, n, alpha, x, incx))
DOPPIO_CUBLAS_FORWARD(cublasDscal_v2,
                      (cublasHandle_t h, int n, const double* alpha, double* x, int incx),
                      (h, n, alpha, x, incx))
DOPPIO_CUBLAS_FORWARD(cublasSdot_v2,
                      (cublasHandle_t h, int n, const float* x, int incx, const float* y, int incy,
                       float* result),
                      (h, n, x, incx, y, incy, result))
DOPPIO_CUBLAS_FORWARD(cublasDdot_v2,
                      (cublasHandle_t h, int n, const double* x, int incx, const double* y,
                       int incy, double* result),
                      (h, n, x, incx, y, incy, result))
DOPPIO_CUBLAS_FORWARD(cublasSasum_v2,
                      (cublasHandle_t h, int n, const float* x, int incx, float* result),
                      (h, n, x, incx, result))
DOPPIO_CUBLAS_FORWARD(cublasDasum_v2,
                      (cublasHandle_t h, int n, const double* x, int incx, double* result),
                      (h, n, x, incx, result))

// cublas_api.h overloads cublasGemmEx (an inline wrapper takes the old cudaDataType compute
// type), so decltype cannot name the one to forward: its type is spelled out.
using CublasGemmEx = cublasStatus_t(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int,
                                    int, const void*, const void*, cudaDataType, int, const void*,
                                    cudaDataType, int, const void*, void*, cudaDataType, int,
                                    cublasComputeType_t, cublasGemmAlgo_t);
extern "C" cublasStatus_t CUBLASWINAPI
cublasGemmEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
             const void* alpha, const void* a, cudaDataType a_type, int lda, const void* b,
             cudaDataType b_type, int ldb, const void* beta, void* c, cudaDataType c_type, int ldc,
             cublasComputeType_t compute, cublasGemmAlgo_t algo) {
  static CublasGemmEx* const real = doppio::Resolve<CublasGemmEx>("cublasGemmEx");
  return real(h, ta, tb, m, n, k, alpha, a, a_type, lda, b, b_type, ldb, beta, c, c_type, ldc,
              compute, algo);
}
