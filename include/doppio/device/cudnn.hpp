#pragma once

// Small helpers shared by the cuDNN engines (builds with cuDNN only).
#ifdef DOPPIO_WITH_CUDNN

#include <cudnn.h>

#include <vector>

#include "doppio/device/gpu_half.hpp"
#include "doppio/device/gpu_util.hpp"

namespace doppio {

template <typename Dtype>
struct CudnnDataType;

template <>
struct CudnnDataType<float> {
  static constexpr cudnnDataType_t kType = CUDNN_DATA_FLOAT;
};

template <>
struct CudnnDataType<double> {
  static constexpr cudnnDataType_t kType = CUDNN_DATA_DOUBLE;
};

// The cuDNN type of a Dtype buffer's device elements held as `storage`: Dtype's own for
// kFloat32.
template <typename Dtype>
cudnnDataType_t CudnnStorageType(GpuStorage storage) {
  if (storage == GpuStorage::kFloat16) return CUDNN_DATA_HALF;
  if (storage == GpuStorage::kBfloat16) return CUDNN_DATA_BFLOAT16;
  return CudnnDataType<Dtype>::kType;
}

// The scaling factors cuDNN takes by pointer (float for 16-bit data too): float for float data,
// double for double.
template <typename Dtype>
struct CudnnScalar {
  static const void* one() {
    static const Dtype value = 1;
    return &value;
  }
  static const void* zero() {
    static const Dtype value = 0;
    return &value;
  }
};

// An owned cuDNN descriptor of one kind, created on first use and destroyed with its owner.
class CudnnTensorDesc {
 public:
  CudnnTensorDesc() = default;
  ~CudnnTensorDesc() {
    if (desc_) cudnnDestroyTensorDescriptor(desc_);
  }
  CudnnTensorDesc(const CudnnTensorDesc&) = delete;
  CudnnTensorDesc& operator=(const CudnnTensorDesc&) = delete;

  // A packed (n, c, h, w) tensor.
  template <typename Dtype>
  void Set4d(int n, int c, int h, int w) {
    Set4d(CudnnDataType<Dtype>::kType, n, c, h, w);
  }
  void Set4d(cudnnDataType_t type, int n, int c, int h, int w) {
    if (!desc_) DOPPIO_CUDNN_CHECK(cudnnCreateTensorDescriptor(&desc_));
    DOPPIO_CUDNN_CHECK(
        cudnnSetTensor4dDescriptorEx(desc_, type, n, c, h, w, c * h * w, h * w, w, 1));
  }
  cudnnTensorDescriptor_t get() const { return desc_; }

 private:
  cudnnTensorDescriptor_t desc_ = nullptr;
};

class GpuContext;

// An element-wise cuDNN activation (ReLU, sigmoid, tanh) over `count` contiguous values.
class CudnnActivation {
 public:
  explicit CudnnActivation(cudnnActivationMode_t mode) : mode_(mode) {}
  ~CudnnActivation();
  CudnnActivation(const CudnnActivation&) = delete;
  CudnnActivation& operator=(const CudnnActivation&) = delete;

  // y = f(x); y may be x.
  template <typename Dtype>
  void Forward(GpuContext& gpu, int count, const Dtype* x, Dtype* y);
  // dx = f'(x) dy, from the output y (and the input x, which in place is y); dx may be dy.
  template <typename Dtype>
  void Backward(GpuContext& gpu, int count, const Dtype* y, const Dtype* dy, const Dtype* x,
                Dtype* dx);

 private:
  template <typename Dtype>
  void Prepare(int count);

  cudnnActivationMode_t mode_;
  cudnnActivationDescriptor_t activation_ = nullptr;
  CudnnTensorDesc desc_;
};

}  // namespace doppio

#endif  // DOPPIO_WITH_CUDNN
