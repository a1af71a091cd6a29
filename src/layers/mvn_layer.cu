#include "doppio/core/layer_kernels.cuh"
#include "doppio/layers/mvn_layer.hpp"

namespace doppio {

namespace {
// One block per row: its mean and sqrt(variance) + eps (1 without variance normalisation).
template <typename Dtype>
__global__ void MVNRowStats(int rows, int dim, bool normalize_variance, Dtype eps, const Dtype* x,
                            Dtype* mean, Dtype* scale) {
  __shared__ Dtype cache[kGpuThreads];
  for (int r = blockIdx.x; r < rows; r += gridDim.x) {
    const Dtype* row = x + static_cast<long long>(r) * dim;
    Dtype sum = 0;
    for (int k = threadIdx.x; k < dim; k += blockDim.x) sum += row[k];
    const Dtype m = BlockReduceSum(sum, cache) / dim;
    Dtype squares = 0;
    for (int k = threadIdx.x; k < dim; k += blockDim.x) squares += (row[k] - m) * (row[k] - m);
    const Dtype total = BlockReduceSum(squares, cache);
    if (threadIdx.x == 0) {
      mean[r] = m;
      scale[r] = normalize_variance ? sqrt(total / dim) + eps : Dtype(1);
    }
  }
}

template <typename Dtype>
__global__ void MVNForward(long long n, int dim, const Dtype* x, const Dtype* mean,
                           const Dtype* scale, Dtype* y) {
  DOPPIO_KERNEL_LOOP(i, n) {
    const long long r = i / dim;
    y[i] = (x[i] - mean[r]) / scale[r];
  }
}

// One block per row: the sums of dy and of y * dy.
template <typename Dtype>
__global__ void MVNRowGradientSums(int rows, int dim, const Dtype* y, const Dtype* dy,
                                   Dtype* sum_dy, Dtype* sum_ydy) {
  __shared__ Dtype cache[kGpuThreads];
  for (int r = blockIdx.x; r < rows; r += gridDim.x) {
    const long long base = static_cast<long long>(r) * dim;
    Dtype a = 0;
    Dtype b = 0;
    for (int k = threadIdx.x; k < dim; k += blockDim.x) {
      a += dy[base + k];
      b += y[base + k] * dy[base + k];
    }
    const Dtype total_a = BlockReduceSum(a, cache);
    const Dtype total_b = BlockReduceSum(b, cache);
    if (threadIdx.x == 0) {
      sum_dy[r] = total_a;
      sum_ydy[r] = total_b;
    }
  }
}

template <typename Dtype>
__global__ void MVNBackward(long long n, int dim, bool normalize_variance, const Dtype* y,
                            const Dtype* dy, const Dtype* sum_dy, const Dtype* sum_ydy,
                            const Dtype* scale, Dtype* dx) {
  DOPPIO_KERNEL_LOOP(i, n) {
    const long long r = i / dim;
    const Dtype ydy = normalize_variance ? y[i] * sum_ydy[r] : Dtype(0);
    dx[i] = (dy[i] - (sum_dy[r] + ydy) / dim) / scale[r];
  }
}
// Threads per row: a power of two (as the block reductions need) no larger than the row
// needs, from a warp to kGpuThreads.
int RowThreads(int dim) {
  int threads = 32;
  while (threads < dim && threads < kGpuThreads) threads *= 2;
  return threads;
}
}  // namespace

template <typename Dtype>
void MVNLayer<Dtype>::Forward_gpu(const BlobVec& bottom, const BlobVec& top) {
  if (rows_ == 0 || dim_ == 0) return;
  GpuContext& gpu = this->gpu();
  const Dtype* x = bottom[0]->gpu_data(gpu);
  DOPPIO_LAUNCH(MVNRowStats<Dtype>, GpuRowBlocks(rows_), RowThreads(dim_), gpu.stream())
  (rows_, dim_, normalize_variance_, eps_, x, mean_.mutable_gpu_data(gpu),
   scale_.mutable_gpu_data(gpu));
  DOPPIO_CUDA_POST_KERNEL_CHECK("MVNRowStats");
  const long long n = bottom[0]->count();
  LaunchKernel("MVNForward", gpu, n, MVNForward<Dtype>, n, dim_, x, mean_.gpu_data(gpu),
               scale_.gpu_data(gpu), top[0]->mutable_gpu_data(gpu));
}

template <typename Dtype>
void MVNLayer<Dtype>::Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                                   const BlobVec& bottom) {
  if (!propagate_down[0] || rows_ == 0 || dim_ == 0) return;
  GpuContext& gpu = this->gpu();
  const Dtype* y = top[0]->gpu_data(gpu);
  const Dtype* dy = top[0]->gpu_diff(gpu);
  DOPPIO_LAUNCH(MVNRowGradientSums<Dtype>, GpuRowBlocks(rows_), RowThreads(dim_), gpu.stream())
  (rows_, dim_, y, dy, sum_dy_.mutable_gpu_data(gpu), sum_ydy_.mutable_gpu_data(gpu));
  DOPPIO_CUDA_POST_KERNEL_CHECK("MVNRowGradientSums");
  const long long n = bottom[0]->count();
  LaunchKernel("MVNBackward", gpu, n, MVNBackward<Dtype>, n, dim_, normalize_variance_, y, dy,
               sum_dy_.gpu_data(gpu), sum_ydy_.gpu_data(gpu), scale_.gpu_data(gpu),
               bottom[0]->mutable_gpu_diff(gpu));
}

DOPPIO_INSTANTIATE_LAYER_GPU_FUNCS(MVNLayer);

}  // namespace doppio
