#include <cfloat>

#include "doppio/core/layer_kernels.cuh"
#include "doppio/layers/softmax_layer.hpp"

namespace doppio {

namespace {
// inner == 1: one block per contiguous row of `dim` values.
template <typename Dtype>
__global__ void RowSoftmaxForward(int rows, int dim, const Dtype* in, Dtype* out) {
  __shared__ Dtype cache[kGpuThreads];
  for (int r = blockIdx.x; r < rows; r += gridDim.x) {
    const Dtype* x = in + static_cast<long long>(r) * dim;
    Dtype* y = out + static_cast<long long>(r) * dim;
    Dtype local_max = -INFINITY;
    for (int c = threadIdx.x; c < dim; c += blockDim.x) local_max = max(local_max, x[c]);
    const Dtype row_max = BlockReduceMax(local_max, cache);
    Dtype local_sum = 0;
    for (int c = threadIdx.x; c < dim; c += blockDim.x) {
      const Dtype e = exp(x[c] - row_max);
      y[c] = e;
      local_sum += e;
    }
    const Dtype inv = Dtype(1) / BlockReduceSum(local_sum, cache);
    for (int c = threadIdx.x; c < dim; c += blockDim.x) y[c] *= inv;
  }
}

template <typename Dtype>
__global__ void RowSoftmaxBackward(int rows, int dim, const Dtype* top_data, const Dtype* top_diff,
                                   Dtype* bottom_diff) {
  __shared__ Dtype cache[kGpuThreads];
  for (int r = blockIdx.x; r < rows; r += gridDim.x) {
    const long long base = static_cast<long long>(r) * dim;
    Dtype local = 0;
    for (int c = threadIdx.x; c < dim; c += blockDim.x)
      local += top_diff[base + c] * top_data[base + c];
    // Every thread has the dot before any writes (bottom_diff may alias top_diff).
    const Dtype dot = BlockReduceSum(local, cache);
    for (int c = threadIdx.x; c < dim; c += blockDim.x) {
      bottom_diff[base + c] = (top_diff[base + c] - dot) * top_data[base + c];
    }
  }
}

// inner > 1: one thread per (outer, inner) position walks the channels.
template <typename Dtype>
__global__ void StridedSoftmaxForward(long long n, int channels, int inner, const Dtype* in,
                                      Dtype* out) {
  DOPPIO_KERNEL_LOOP(p, n) {
    const long long base = (p / inner) * channels * inner + p % inner;
    Dtype m = in[base];
    for (int c = 1; c < channels; ++c) m = max(m, in[base + static_cast<long long>(c) * inner]);
    Dtype sum = 0;
    for (int c = 0; c < channels; ++c) {
      const long long i = base + static_cast<long long>(c) * inner;
      const Dtype e = exp(in[i] - m);
      out[i] = e;
      sum += e;
    }
    const Dtype inv = Dtype(1) / sum;
    for (int c = 0; c < channels; ++c) out[base + static_cast<long long>(c) * inner] *= inv;
  }
}

template <typename Dtype>
__global__ void StridedSoftmaxBackward(long long n, int channels, int inner, const Dtype* top_data,
                                       const Dtype* top_diff, Dtype* bottom_diff) {
  DOPPIO_KERNEL_LOOP(p, n) {
    const long long base = (p / inner) * channels * inner + p % inner;
    Dtype dot = 0;
    for (int c = 0; c < channels; ++c) {
      const long long i = base + static_cast<long long>(c) * inner;
      dot += top_diff[i] * top_data[i];
    }
    for (int c = 0; c < channels; ++c) {
      const long long i = base + static_cast<long long>(c) * inner;
      bottom_diff[i] = (top_diff[i] - dot) * top_data[i];
    }
  }
}
}  // namespace

template <typename Dtype>
void SoftmaxLayer<Dtype>::Forward_gpu(const BlobVec& bottom, const BlobVec& top) {
  if (channels_ == 0 || outer_num_ == 0 || inner_num_ == 0) return;
  GpuContext& gpu = this->gpu();
  const Dtype* in = bottom[0]->gpu_data(gpu);
  Dtype* out = top[0]->mutable_gpu_data(gpu);
  if (inner_num_ == 1) {
    DOPPIO_LAUNCH(RowSoftmaxForward<Dtype>, GpuRowBlocks(outer_num_), kGpuThreads, gpu.stream())
    (outer_num_, channels_, in, out);
    DOPPIO_CUDA_POST_KERNEL_CHECK("RowSoftmaxForward");
    return;
  }
  const long long positions = static_cast<long long>(outer_num_) * inner_num_;
  LaunchKernel("StridedSoftmaxForward", gpu, positions, StridedSoftmaxForward<Dtype>, positions,
               channels_, inner_num_, in, out);
}

template <typename Dtype>
void SoftmaxLayer<Dtype>::Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                                       const BlobVec& bottom) {
  if (!propagate_down[0]) return;
  if (channels_ == 0 || outer_num_ == 0 || inner_num_ == 0) return;
  GpuContext& gpu = this->gpu();
  const Dtype* top_data = top[0]->gpu_data(gpu);
  const Dtype* top_diff = top[0]->gpu_diff(gpu);
  Dtype* bottom_diff = bottom[0]->mutable_gpu_diff(gpu);
  if (inner_num_ == 1) {
    DOPPIO_LAUNCH(RowSoftmaxBackward<Dtype>, GpuRowBlocks(outer_num_), kGpuThreads, gpu.stream())
    (outer_num_, channels_, top_data, top_diff, bottom_diff);
    DOPPIO_CUDA_POST_KERNEL_CHECK("RowSoftmaxBackward");
    return;
  }
  const long long positions = static_cast<long long>(outer_num_) * inner_num_;
  LaunchKernel("StridedSoftmaxBackward", gpu, positions, StridedSoftmaxBackward<Dtype>, positions,
               channels_, inner_num_, top_data, top_diff, bottom_diff);
}

DOPPIO_INSTANTIATE_LAYER_GPU_FUNCS(SoftmaxLayer);

}  // namespace doppio
