#include "doppio/device/cudnn.hpp"

#ifdef DOPPIO_WITH_CUDNN

#include "doppio/device/gpu_context.hpp"

namespace doppio {

CudnnActivation::~CudnnActivation() {
  if (activation_) cudnnDestroyActivationDescriptor(activation_);
}

template <typename Dtype>
void CudnnActivation::Prepare(int count) {
  if (!activation_) {
    DOPPIO_CUDNN_CHECK(cudnnCreateActivationDescriptor(&activation_));
    DOPPIO_CUDNN_CHECK(cudnnSetActivationDescriptor(activation_, mode_, CUDNN_PROPAGATE_NAN, 0.0));
  }
  // Element-wise: the layout does not matter, one axis holds everything.
  desc_.Set4d<Dtype>(count, 1, 1, 1);
}

template <typename Dtype>
void CudnnActivation::Forward(GpuContext& gpu, int count, const Dtype* x, Dtype* y) {
  if (count == 0) return;
  Prepare<Dtype>(count);
  DOPPIO_CUDNN_CHECK(cudnnActivationForward(gpu.cudnn(), activation_, CudnnScalar<Dtype>::one(),
                                            desc_.get(), x, CudnnScalar<Dtype>::zero(), desc_.get(),
                                            y));
}

template <typename Dtype>
void CudnnActivation::Backward(GpuContext& gpu, int count, const Dtype* y, const Dtype* dy,
                               const Dtype* x, Dtype* dx) {
  if (count == 0) return;
  Prepare<Dtype>(count);
  DOPPIO_CUDNN_CHECK(cudnnActivationBackward(gpu.cudnn(), activation_, CudnnScalar<Dtype>::one(),
                                             desc_.get(), y, desc_.get(), dy, desc_.get(), x,
                                             CudnnScalar<Dtype>::zero(), desc_.get(), dx));
}

template void CudnnActivation::Forward<float>(GpuContext&, int, const float*, float*);
template void CudnnActivation::Forward<double>(GpuContext&, int, const double*, double*);
template void CudnnActivation::Backward<float>(GpuContext&, int, const float*, const float*,
                                               const float*, float*);
template void CudnnActivation::Backward<double>(GpuContext&, int, const double*, const double*,
                                                const double*, double*);

}  // namespace doppio

#endif  // DOPPIO_WITH_CUDNN
