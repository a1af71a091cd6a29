#include <cmath>

#include "doppio/core/layer_kernels.cuh"
#include "doppio/layers/power_layer.hpp"
#include "doppio/util/math_functions.hpp"

namespace doppio {

namespace {
template <typename Dtype>
__global__ void PowerForward(long long n, const Dtype* x, Dtype power, Dtype scale, Dtype shift,
                             Dtype* y) {
  DOPPIO_KERNEL_LOOP(i, n) {
    const Dtype base = shift + scale * x[i];
    if (power == Dtype(1)) {
      y[i] = base;
    } else if (power == Dtype(2)) {
      y[i] = base * base;
    } else {
      y[i] = pow(base, power);
    }
  }
}

// power != 1 and diff_scale != 0 (the constant-gradient cases are a scale).
template <typename Dtype>
__global__ void PowerBackward(long long n, const Dtype* x, const Dtype* y, const Dtype* dy,
                              Dtype power, Dtype scale, Dtype shift, Dtype diff_scale, Dtype* dx) {
  DOPPIO_KERNEL_LOOP(i, n) {
    const Dtype base = shift + scale * x[i];
    if (power == Dtype(2)) {
      dx[i] = dy[i] * diff_scale * base;
    } else {
      // diff_scale * base^(power - 1) = diff_scale * y / base; pow gives the limit at 0.
      const Dtype d = base != Dtype(0) ? y[i] / base : pow(base, power - Dtype(1));
      dx[i] = dy[i] * diff_scale * d;
    }
  }
}
}  // namespace

template <typename Dtype>
void PowerLayer<Dtype>::Forward_gpu(const BlobVec& bottom, const BlobVec& top) {
  GpuContext& gpu = this->gpu();
  const int count = bottom[0]->count();
  Dtype* y = top[0]->mutable_gpu_data(gpu);
  if (diff_scale_ == Dtype(0)) {
    const Dtype value = power_ == Dtype(0) ? Dtype(1) : std::pow(shift_, power_);
    gpu_set(gpu, count, value, y);
    return;
  }
  if (power_ != Dtype(1)) this->KeepInputIfInPlace_gpu(*bottom[0], *top[0]);
  // In place, KeepInputIfInPlace_gpu read the input before this kernel overwrites it.
  LaunchKernel("PowerForward", gpu, count, PowerForward<Dtype>, static_cast<long long>(count),
               bottom[0]->gpu_data(gpu), power_, scale_, shift_, y);
}

template <typename Dtype>
void PowerLayer<Dtype>::Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                                     const BlobVec& bottom) {
  if (!propagate_down[0]) return;
  GpuContext& gpu = this->gpu();
  const int count = bottom[0]->count();
  const Dtype* dy = top[0]->gpu_diff(gpu);
  Dtype* dx = bottom[0]->mutable_gpu_diff(gpu);
  if (diff_scale_ == Dtype(0) || power_ == Dtype(1)) {
    gpu_scale(gpu, count, diff_scale_, dy, dx);
    return;
  }
  const Dtype* x = this->ForwardInput_gpu(*bottom[0]);
  LaunchKernel("PowerBackward", gpu, count, PowerBackward<Dtype>, static_cast<long long>(count), x,
               top[0]->gpu_data(gpu), dy, power_, scale_, shift_, diff_scale_, dx);
}

DOPPIO_INSTANTIATE_LAYER_GPU_FUNCS(PowerLayer);

}  // namespace doppio
