#include "doppio/device/cuda_kernels.cuh"
#include "doppio/solvers/sgd_one_pass.hpp"

namespace doppio {

namespace {
// cpu_sgd_one_pass's element step; each element finds its segment by binary search
// over the segments' ends (a few hundred at most, read through the cache).
template <typename Dtype>
__global__ void SgdOnePassKernel(long long n, const SgdSegment<Dtype>* segments, int count,
                                 Dtype grad_scale, Dtype momentum, bool l1, Dtype* weights,
                                 Dtype* diff, Dtype* history, int* non_finite) {
  bool seen = false;
  DOPPIO_KERNEL_LOOP(i, n) {
    int low = 0, high = count - 1;
    while (low < high) {
      const int mid = (low + high) / 2;
      if (static_cast<long long>(segments[mid].end) <= i) {
        low = mid + 1;
      } else {
        high = mid;
      }
    }
    const Dtype value =
        SgdOnePassStep(segments[low], grad_scale, momentum, l1, weights + i, diff + i, history + i);
    seen |= !isfinite(value);
  }
  // Every writer stores the same 1: no atomic needed.
  if (seen) *non_finite = 1;
}
}  // namespace

template <typename Dtype>
bool gpu_sgd_one_pass(GpuContext& gpu, const std::vector<SgdSegment<Dtype>>& segments,
                      Dtype grad_scale, Dtype momentum, bool l1, Dtype* weights, Dtype* diff,
                      Dtype* history) {
  if (segments.empty() || segments.back().end == 0) return true;
  const std::size_t table_bytes = segments.size() * sizeof(SgdSegment<Dtype>);
  // The table, then the flag, in one block from the allocator (stream-ordered reuse).
  const std::size_t flag_offset = (table_bytes + 15) / 16 * 16;
  char* block = static_cast<char*>(gpu.allocator().Allocate(flag_offset + sizeof(int)));
  auto* table = reinterpret_cast<SgdSegment<Dtype>*>(block);
  int* flag = reinterpret_cast<int*>(block + flag_offset);
  int non_finite = 0;
  try {
    DOPPIO_CUDA_CHECK(
        cudaMemcpyAsync(table, segments.data(), table_bytes, cudaMemcpyHostToDevice, gpu.stream()));
    DOPPIO_CUDA_CHECK(cudaMemsetAsync(flag, 0, sizeof(int), gpu.stream()));
    const long long n = static_cast<long long>(segments.back().end);
    LaunchKernel("SgdOnePassKernel", gpu, n, SgdOnePassKernel<Dtype>, n,
                 static_cast<const SgdSegment<Dtype>*>(table), static_cast<int>(segments.size()),
                 grad_scale, momentum, l1, weights, diff, history, flag);
    DOPPIO_CUDA_CHECK(
        cudaMemcpyAsync(&non_finite, flag, sizeof(int), cudaMemcpyDeviceToHost, gpu.stream()));
    DOPPIO_CUDA_CHECK(cudaStreamSynchronize(gpu.stream()));
  } catch (...) {
    gpu.allocator().Free(block);
    throw;
  }
  gpu.allocator().Free(block);
  return non_finite == 0;
}

template bool gpu_sgd_one_pass(GpuContext&, const std::vector<SgdSegment<float>>&, float, float,
                               bool, float*, float*, float*);
template bool gpu_sgd_one_pass(GpuContext&, const std::vector<SgdSegment<double>>&, double, double,
                               bool, double*, double*, double*);

}  // namespace doppio
