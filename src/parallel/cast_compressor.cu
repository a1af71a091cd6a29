#include "doppio/core/common.hpp"
#include "doppio/device/cuda_kernels.cuh"
#include "doppio/parallel/cast_compressor.hpp"
#include "doppio/util/half.hpp"

namespace doppio {

namespace {

// The host's conversions (util/half.hpp), element by element.
template <typename Dtype>
__global__ void CastPack(long long n, const Dtype* bucket, bool bfloat16, std::uint16_t* wire) {
  DOPPIO_KERNEL_LOOP(i, n) {
    const float value = static_cast<float>(bucket[i]);
    wire[i] = bfloat16 ? FloatToBfloat16(value) : FloatToHalf(value);
  }
}

// The ranks' halves of element i summed in Dtype in rank order, from zero: the host's sum.
template <typename Dtype>
__global__ void CastSum(long long n, int ranks, const std::uint16_t* gathered, bool bfloat16,
                        Dtype* bucket) {
  DOPPIO_KERNEL_LOOP(i, n) {
    Dtype sum = 0;
    for (int r = 0; r < ranks; ++r) {
      const std::uint16_t half = gathered[r * n + i];
      sum += bfloat16 ? Bfloat16ToFloat(half) : HalfToFloat(half);
    }
    bucket[i] = sum;
  }
}

}  // namespace

template <typename Dtype>
void CastCompressor<Dtype>::Pack_gpu(const Dtype* bucket, std::uint16_t* wire) {
  const auto n = static_cast<long long>(count_);
  LaunchKernel("CastPack", *this->gpu_, n, CastPack<Dtype>, n, bucket, bfloat16_, wire);
}

template <typename Dtype>
void CastCompressor<Dtype>::Sum_gpu(const std::uint16_t* gathered, int ranks, Dtype* bucket) {
  const auto n = static_cast<long long>(count_);
  LaunchKernel("CastSum", *this->gpu_, n, CastSum<Dtype>, n, ranks, gathered, bfloat16_, bucket);
}

template void CastCompressor<float>::Pack_gpu(const float*, std::uint16_t*);
template void CastCompressor<double>::Pack_gpu(const double*, std::uint16_t*);
template void CastCompressor<float>::Sum_gpu(const std::uint16_t*, int, float*);
template void CastCompressor<double>::Sum_gpu(const std::uint16_t*, int, double*);

}  // namespace doppio
