#include "doppio/core/layer_kernels.cuh"
#include "doppio/layers/prelu_layer.hpp"
#include "doppio/util/math_functions.hpp"

namespace doppio {

namespace {
// Elements are (outer, channels, dim); the slope of element i is slope[(i / dim) % channels],
// or slope[0] when shared (div_factor = channels then, making the channel 0).
template <typename Dtype>
__global__ void PReLUForward(long long n, int channels, int dim, const Dtype* x, const Dtype* slope,
                             int div_factor, Dtype* y) {
  DOPPIO_KERNEL_LOOP(i, n) {
    const int c = static_cast<int>((i / dim) % channels) / div_factor;
    y[i] = x[i] > Dtype(0) ? x[i] : slope[c] * x[i];
  }
}

template <typename Dtype>
__global__ void PReLUBackward(long long n, int channels, int dim, const Dtype* x, const Dtype* dy,
                              const Dtype* slope, int div_factor, Dtype* dx) {
  DOPPIO_KERNEL_LOOP(i, n) {
    const int c = static_cast<int>((i / dim) % channels) / div_factor;
    dx[i] = x[i] > Dtype(0) ? dy[i] : slope[c] * dy[i];
  }
}

// The slope's gradient term: dy * x where x <= 0.
template <typename Dtype>
struct NegativePartTerm {
  const Dtype* dy;
  const Dtype* x;
  __device__ Dtype operator()(long long i) const { return x[i] <= Dtype(0) ? dy[i] * x[i] : 0; }
};

// Adds the per-channel sums into the one shared slope, in channel order.
template <typename Dtype>
__global__ void AddChannelTotal(int channels, const Dtype* sums, Dtype* slope_diff) {
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    Dtype total = 0;
    for (int c = 0; c < channels; ++c) total += sums[c];
    slope_diff[0] += total;
  }
}
}  // namespace

template <typename Dtype>
void PReLULayer<Dtype>::Forward_gpu(const BlobVec& bottom, const BlobVec& top) {
  this->KeepInputIfInPlace_gpu(*bottom[0], *top[0]);
  GpuContext& gpu = this->gpu();
  const long long count = bottom[0]->count();
  const int dim = bottom[0]->count(2);
  if (count == 0 || dim == 0) return;
  LaunchKernel("PReLUForward", gpu, count, PReLUForward<Dtype>, count, channels_, dim,
               bottom[0]->gpu_data(gpu), this->blobs_[0]->gpu_data(gpu),
               channel_shared_ ? channels_ : 1, top[0]->mutable_gpu_data(gpu));
}

template <typename Dtype>
void PReLULayer<Dtype>::Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                                     const BlobVec& bottom) {
  GpuContext& gpu = this->gpu();
  const long long count = bottom[0]->count();
  const int outer = bottom[0]->shape(0);
  const int dim = bottom[0]->count(2);
  if (count == 0 || dim == 0) return;
  const Dtype* x = this->ForwardInput_gpu(*bottom[0]);
  const Dtype* dy = top[0]->gpu_diff(gpu);
  // The slope gradient reads the top diff, which in place is the bottom diff written below.
  if (this->param_propagate_down(0)) {
    Dtype* slope_diff = this->blobs_[0]->mutable_gpu_diff(gpu);
    if (channel_shared_) {
      channel_sums_.Reshape(std::vector<int>{channels_});
      Dtype* sums = channel_sums_.mutable_gpu_data(gpu);
      ChannelSum(gpu, outer, channels_, dim, NegativePartTerm<Dtype>{dy, x}, Dtype(0), sums);
      DOPPIO_LAUNCH(AddChannelTotal<Dtype>, 1, 1, gpu.stream())(channels_, sums, slope_diff);
      DOPPIO_CUDA_POST_KERNEL_CHECK("AddChannelTotal");
    } else {
      ChannelSum(gpu, outer, channels_, dim, NegativePartTerm<Dtype>{dy, x}, Dtype(1), slope_diff);
    }
  }
  if (propagate_down[0]) {
    LaunchKernel("PReLUBackward", gpu, count, PReLUBackward<Dtype>, count, channels_, dim, x, dy,
                 this->blobs_[0]->gpu_data(gpu), channel_shared_ ? channels_ : 1,
                 bottom[0]->mutable_gpu_diff(gpu));
  }
}

DOPPIO_INSTANTIATE_LAYER_GPU_FUNCS(PReLULayer);

}  // namespace doppio
