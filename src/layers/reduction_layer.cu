#include "doppio/core/layer_kernels.cuh"
#include "doppio/layers/reduction_layer.hpp"
#include "doppio/util/math_functions.hpp"

namespace doppio {

namespace {
// One block per row of `dim` values: top[r] = coeff * sum over the row of f(x).
template <typename Dtype>
__global__ void ReduceRows(int rows, int dim, int op, Dtype coeff, const Dtype* x, Dtype* top) {
  __shared__ Dtype cache[kGpuThreads];
  for (int r = blockIdx.x; r < rows; r += gridDim.x) {
    const Dtype* row = x + static_cast<long long>(r) * dim;
    Dtype sum = 0;
    for (int j = threadIdx.x; j < dim; j += blockDim.x) {
      const Dtype v = row[j];
      switch (op) {
        case ReductionParameter::ASUM:
          sum += fabs(v);
          break;
        case ReductionParameter::SUMSQ:
          sum += v * v;
          break;
        default:  // SUM, MEAN
          sum += v;
      }
    }
    const Dtype total = BlockReduceSum(sum, cache);
    if (threadIdx.x == 0) top[r] = coeff * total;
  }
}

template <typename Dtype>
__global__ void ReductionBackward(long long n, int dim, int op, Dtype coeff, const Dtype* top_diff,
                                  const Dtype* x, Dtype* dx) {
  DOPPIO_KERNEL_LOOP(i, n) {
    const Dtype scale = top_diff[i / dim] * coeff;
    switch (op) {
      case ReductionParameter::ASUM:
        dx[i] = x[i] > Dtype(0) ? scale : (x[i] < Dtype(0) ? -scale : Dtype(0));
        break;
      case ReductionParameter::SUMSQ:
        dx[i] = 2 * scale * x[i];
        break;
      default:  // SUM, MEAN
        dx[i] = scale;
    }
  }
}
}  // namespace

template <typename Dtype>
void ReductionLayer<Dtype>::Forward_gpu(const BlobVec& bottom, const BlobVec& top) {
  if (num_ == 0) return;
  GpuContext& gpu = this->gpu();
  Dtype* top_data = top[0]->mutable_gpu_data(gpu);
  if (dim_ == 0) {
    gpu_set(gpu, num_, Dtype(0), top_data);
    return;
  }
  DOPPIO_ENSURE(op_ == ReductionParameter::SUM || op_ == ReductionParameter::MEAN ||
                op_ == ReductionParameter::ASUM || op_ == ReductionParameter::SUMSQ)
      << this->Describe() << ": unknown reduction_param.operation " << op_;
  DOPPIO_LAUNCH(ReduceRows<Dtype>, GpuRowBlocks(num_), kGpuThreads, gpu.stream())
  (num_, dim_, static_cast<int>(op_), coeff_, bottom[0]->gpu_data(gpu), top_data);
  DOPPIO_CUDA_POST_KERNEL_CHECK("ReduceRows");
}

template <typename Dtype>
void ReductionLayer<Dtype>::Backward_gpu(const BlobVec& top,
                                         const std::vector<bool>& propagate_down,
                                         const BlobVec& bottom) {
  if (!propagate_down[0] || num_ == 0 || dim_ == 0) return;
  GpuContext& gpu = this->gpu();
  const long long count = static_cast<long long>(num_) * dim_;
  LaunchKernel("ReductionBackward", gpu, count, ReductionBackward<Dtype>, count, dim_,
               static_cast<int>(op_), coeff_, top[0]->gpu_diff(gpu), bottom[0]->gpu_data(gpu),
               bottom[0]->mutable_gpu_diff(gpu));
}

DOPPIO_INSTANTIATE_LAYER_GPU_FUNCS(ReductionLayer);

}  // namespace doppio
