#include "doppio/core/device_math.hpp"

#include "doppio/device/gpu_math.hpp"
#include "doppio/util/math_functions.hpp"

namespace doppio {

// Each operation calls the host or the device version; without CUDA only the host exists.
#ifdef DOPPIO_WITH_CUDA
#define DOPPIO_ON_SIDE(gpu_call, cpu_call) \
  if (gpu_) {                              \
    gpu_call;                              \
  } else {                                 \
    cpu_call;                              \
  }
#else
#define DOPPIO_ON_SIDE(gpu_call, cpu_call) cpu_call
#endif

template <typename Dtype>
const Dtype* DeviceMath<Dtype>::data(const Blob<Dtype>& blob) const {
  DOPPIO_ON_SIDE(return blob.gpu_data(*gpu_), return blob.cpu_data());
}
template <typename Dtype>
const Dtype* DeviceMath<Dtype>::diff(const Blob<Dtype>& blob) const {
  DOPPIO_ON_SIDE(return blob.gpu_diff(*gpu_), return blob.cpu_diff());
}
template <typename Dtype>
Dtype* DeviceMath<Dtype>::mutable_data(Blob<Dtype>* blob) const {
  DOPPIO_ON_SIDE(return blob->mutable_gpu_data(*gpu_), return blob->mutable_cpu_data());
}
template <typename Dtype>
Dtype* DeviceMath<Dtype>::mutable_diff(Blob<Dtype>* blob) const {
  DOPPIO_ON_SIDE(return blob->mutable_gpu_diff(*gpu_), return blob->mutable_cpu_diff());
}

template <typename Dtype>
void DeviceMath<Dtype>::axpy(int n, Dtype alpha, const Dtype* x, Dtype* y) const {
  DOPPIO_ON_SIDE(gpu_axpy(*gpu_, n, alpha, x, y), cpu_axpy(n, alpha, x, y));
}
template <typename Dtype>
void DeviceMath<Dtype>::axpby(int n, Dtype alpha, const Dtype* x, Dtype beta, Dtype* y) const {
  DOPPIO_ON_SIDE(gpu_axpby(*gpu_, n, alpha, x, beta, y), cpu_axpby(n, alpha, x, beta, y));
}
template <typename Dtype>
void DeviceMath<Dtype>::scal(int n, Dtype alpha, Dtype* x) const {
  DOPPIO_ON_SIDE(gpu_scal(*gpu_, n, alpha, x), cpu_scal(n, alpha, x));
}
template <typename Dtype>
void DeviceMath<Dtype>::scale(int n, Dtype alpha, const Dtype* x, Dtype* y) const {
  DOPPIO_ON_SIDE(gpu_scale(*gpu_, n, alpha, x, y), cpu_scale(n, alpha, x, y));
}
template <typename Dtype>
void DeviceMath<Dtype>::copy(int n, const Dtype* x, Dtype* y) const {
  DOPPIO_ON_SIDE(gpu_copy(*gpu_, n, x, y), cpu_copy(n, x, y));
}
template <typename Dtype>
void DeviceMath<Dtype>::set(int n, Dtype value, Dtype* y) const {
  DOPPIO_ON_SIDE(gpu_set(*gpu_, n, value, y), cpu_set(n, value, y));
}
template <typename Dtype>
void DeviceMath<Dtype>::add(int n, const Dtype* a, const Dtype* b, Dtype* y) const {
  DOPPIO_ON_SIDE(gpu_add(*gpu_, n, a, b, y), cpu_add(n, a, b, y));
}
template <typename Dtype>
void DeviceMath<Dtype>::mul(int n, const Dtype* a, const Dtype* b, Dtype* y) const {
  DOPPIO_ON_SIDE(gpu_mul(*gpu_, n, a, b, y), cpu_mul(n, a, b, y));
}
template <typename Dtype>
void DeviceMath<Dtype>::div(int n, const Dtype* a, const Dtype* b, Dtype* y) const {
  DOPPIO_ON_SIDE(gpu_div(*gpu_, n, a, b, y), cpu_div(n, a, b, y));
}
template <typename Dtype>
void DeviceMath<Dtype>::add_scalar(int n, Dtype alpha, Dtype* y) const {
  DOPPIO_ON_SIDE(gpu_add_scalar(*gpu_, n, alpha, y), cpu_add_scalar(n, alpha, y));
}
template <typename Dtype>
void DeviceMath<Dtype>::sqr(int n, const Dtype* a, Dtype* y) const {
  DOPPIO_ON_SIDE(gpu_sqr(*gpu_, n, a, y), cpu_sqr(n, a, y));
}
template <typename Dtype>
void DeviceMath<Dtype>::sqrt(int n, const Dtype* a, Dtype* y) const {
  DOPPIO_ON_SIDE(gpu_sqrt(*gpu_, n, a, y), cpu_sqrt(n, a, y));
}
template <typename Dtype>
void DeviceMath<Dtype>::sign(int n, const Dtype* a, Dtype* y) const {
  DOPPIO_ON_SIDE(gpu_sign(*gpu_, n, a, y), cpu_sign(n, a, y));
}

#undef DOPPIO_ON_SIDE

DOPPIO_INSTANTIATE_CLASS(DeviceMath);

}  // namespace doppio
