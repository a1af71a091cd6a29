#pragma once

// Status checks for CUDA, cuBLAS and cuDNN calls (CUDA builds only). Every failing call
// throws doppio::Error naming the call, the file and line, and the library's own message,
// so that a tool can print it and exit non-zero (a GPU out of memory, a missing driver or a
// bad launch is not an internal invariant a CHECK should abort on).
#ifdef DOPPIO_WITH_CUDA

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "doppio/util/error.hpp"

#ifdef DOPPIO_WITH_CUDNN
#include <cudnn.h>
#endif

namespace doppio {

const char* CublasStatusName(cublasStatus_t status);

namespace detail {
[[noreturn]] void ThrowCudaError(cudaError_t status, const char* call, const char* file, int line);
[[noreturn]] void ThrowCublasError(cublasStatus_t status, const char* call, const char* file,
                                   int line);
#ifdef DOPPIO_WITH_CUDNN
[[noreturn]] void ThrowCudnnError(cudnnStatus_t status, const char* call, const char* file,
                                  int line);
#endif
}  // namespace detail

}  // namespace doppio

#define DOPPIO_CUDA_CHECK(call)                                                    \
  do {                                                                             \
    const cudaError_t doppio_status_ = (call);                                     \
    if (doppio_status_ != cudaSuccess) {                                           \
      ::doppio::detail::ThrowCudaError(doppio_status_, #call, __FILE__, __LINE__); \
    }                                                                              \
  } while (0)

#define DOPPIO_CUBLAS_CHECK(call)                                                    \
  do {                                                                               \
    const cublasStatus_t doppio_status_ = (call);                                    \
    if (doppio_status_ != CUBLAS_STATUS_SUCCESS) {                                   \
      ::doppio::detail::ThrowCublasError(doppio_status_, #call, __FILE__, __LINE__); \
    }                                                                                \
  } while (0)

#ifdef DOPPIO_WITH_CUDNN
#define DOPPIO_CUDNN_CHECK(call)                                                    \
  do {                                                                              \
    const cudnnStatus_t doppio_status_ = (call);                                    \
    if (doppio_status_ != CUDNN_STATUS_SUCCESS) {                                   \
      ::doppio::detail::ThrowCudnnError(doppio_status_, #call, __FILE__, __LINE__); \
    }                                                                               \
  } while (0)
#endif

// After a kernel launch: a bad configuration (too many threads, no kernel image for this
// GPU) is reported by cudaGetLastError, not by the launch itself.
#define DOPPIO_CUDA_POST_KERNEL_CHECK(name)                                                 \
  do {                                                                                      \
    const cudaError_t doppio_status_ = cudaGetLastError();                                  \
    if (doppio_status_ != cudaSuccess) {                                                    \
      ::doppio::detail::ThrowCudaError(doppio_status_, "kernel " name, __FILE__, __LINE__); \
    }                                                                                       \
  } while (0)

#endif  // DOPPIO_WITH_CUDA
