#include "doppio/core/layer_kernels.cuh"
#include "doppio/layers/swish_layer.hpp"

namespace doppio {

namespace {
template <typename Dtype>
__global__ void SwishForward(long long n, const Dtype* x, Dtype beta, Dtype* s, Dtype* y) {
  DOPPIO_KERNEL_LOOP(i, n) {
    const Dtype sigmoid = Dtype(1) / (Dtype(1) + exp(-beta * x[i]));
    s[i] = sigmoid;
    y[i] = x[i] * sigmoid;
  }
}

template <typename Dtype>
__global__ void SwishBackward(long long n, const Dtype* y, const Dtype* s, const Dtype* dy,
                              Dtype beta, Dtype* dx) {
  // d/dx x s(bx) = b y + s (1 - b y).
  DOPPIO_KERNEL_LOOP(i, n) { dx[i] = dy[i] * (beta * y[i] + s[i] * (Dtype(1) - beta * y[i])); }
}
}  // namespace

template <typename Dtype>
void SwishLayer<Dtype>::Forward_gpu(const BlobVec& bottom, const BlobVec& top) {
  GpuContext& gpu = this->gpu();
  const long long count = bottom[0]->count();
  LaunchKernel("SwishForward", gpu, count, SwishForward<Dtype>, count, bottom[0]->gpu_data(gpu),
               beta_, sigmoid_.mutable_gpu_data(gpu), top[0]->mutable_gpu_data(gpu));
}

template <typename Dtype>
void SwishLayer<Dtype>::Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                                     const BlobVec& bottom) {
  if (!propagate_down[0]) return;
  GpuContext& gpu = this->gpu();
  const long long count = bottom[0]->count();
  LaunchKernel("SwishBackward", gpu, count, SwishBackward<Dtype>, count, top[0]->gpu_data(gpu),
               sigmoid_.gpu_data(gpu), top[0]->gpu_diff(gpu), beta_,
               bottom[0]->mutable_gpu_diff(gpu));
}

DOPPIO_INSTANTIATE_LAYER_GPU_FUNCS(SwishLayer);

}  // namespace doppio
