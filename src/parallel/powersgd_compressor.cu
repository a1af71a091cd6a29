#include <limits>

#include "doppio/core/common.hpp"
#include "doppio/device/cuda_kernels.cuh"
#include "doppio/parallel/powersgd_compressor.hpp"

namespace doppio {

namespace {

// PowerSgdCompressor::Orthogonalise on one block: the same modified Gram-Schmidt, column by
// column, with the host's double sums (each a block reduction) and its Dtype updates.
template <typename Dtype>
__global__ void GramSchmidt(Dtype* matrix, int rows, int cols, double rounding) {
  __shared__ double cache[kGpuThreads];
  auto dot_of = [&](int a, int b) {
    double sum = 0;
    for (int r = threadIdx.x; r < rows; r += blockDim.x) {
      sum += double(matrix[r * cols + a]) * matrix[r * cols + b];
    }
    return BlockReduceSum(sum, cache);
  };
  for (int j = 0; j < cols; ++j) {
    const double before = sqrt(dot_of(j, j));
    for (int i = 0; i < j; ++i) {
      const Dtype dot = static_cast<Dtype>(dot_of(i, j));
      for (int r = threadIdx.x; r < rows; r += blockDim.x) {
        matrix[r * cols + j] -= dot * matrix[r * cols + i];
      }
      __syncthreads();
    }
    const double norm = sqrt(dot_of(j, j));
    const Dtype scale =
        norm > rounding * before && norm > 0 ? static_cast<Dtype>(1 / norm) : Dtype(0);
    for (int r = threadIdx.x; r < rows; r += blockDim.x) matrix[r * cols + j] *= scale;
    __syncthreads();
  }
}

}  // namespace

template <typename Dtype>
void PowerSgdCompressor<Dtype>::Orthogonalise_gpu(GpuContext& gpu, Dtype* matrix, int rows,
                                                  int cols) {
  if (rows <= 0 || cols <= 0) return;
  const double rounding = 64 * std::numeric_limits<Dtype>::epsilon();
  DOPPIO_LAUNCH(GramSchmidt<Dtype>, 1, kGpuThreads, gpu.stream())(matrix, rows, cols, rounding);
  DOPPIO_CUDA_POST_KERNEL_CHECK("GramSchmidt");
}

template void PowerSgdCompressor<float>::Orthogonalise_gpu(GpuContext&, float*, int, int);
template void PowerSgdCompressor<double>::Orthogonalise_gpu(GpuContext&, double*, int, int);

}  // namespace doppio
