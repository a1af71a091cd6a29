#include <cstring>

#include "doppio/core/common.hpp"
#include "doppio/device/cuda_kernels.cuh"
#include "doppio/parallel/topk_compressor.hpp"

namespace doppio {

namespace {

// The selection on the device, equal to the host's nth_element in the order (larger
// magnitude, then smaller index):
//   1. a radix search, 8 bits at a time from the top, for T, the k-th largest magnitude
//      as the bits of |x| (for non-negative floats their order is the values' order), and
//      r, how many of the entries of magnitude T are among the k;
//   2. the entries above T, and the first r (by index) of those equal to it, written in
//      index order: per tile counts, their prefix sums, then each tile's entries at the
//      position its prefix gives.
constexpr int kRadixBits = 8;
constexpr int kRadixBins = 1 << kRadixBits;
// Elements per tile of the compaction.
constexpr long long kTile = 16LL * kGpuThreads;
static_assert(kGpuThreads == kRadixBins, "the histogram kernel gives each thread one bin");

template <typename Dtype>
struct MagnitudeBits;
template <>
struct MagnitudeBits<float> {
  using Key = std::uint32_t;
};
template <>
struct MagnitudeBits<double> {
  using Key = std::uint64_t;
};

// |value| as ordered bits: the value's bits without the sign (a NaN is above infinity).
template <typename Dtype>
__device__ __forceinline__ unsigned long long MagnitudeKey(Dtype value) {
  using Key = typename MagnitudeBits<Dtype>::Key;
  Key bits;
  memcpy(&bits, &value, sizeof(bits));
  const Key sign = Key(1) << (8 * sizeof(Key) - 1);
  return static_cast<unsigned long long>(bits & ~sign);
}

// What the search has fixed: the top bits of T (those under `mask`), and how many of the k
// are still to be found among the entries that share them.
struct SelectState {
  unsigned long long prefix;
  unsigned long long mask;
  long long remaining;
};

struct Scratch {
  SelectState* state;
  int* histogram;     // kRadixBins
  long long* counts;  // per tile: entries above T, entries equal to T
};

__global__ void SelectInit(long long k, SelectState* state, int* histogram) {
  DOPPIO_KERNEL_LOOP(b, kRadixBins) {
    histogram[b] = 0;
    if (b == 0) *state = SelectState{0, 0, k};
  }
}

// The histogram of the digit at `shift` of the entries that match the prefix so far.
template <typename Dtype>
__global__ void DigitHistogram(long long n, const Dtype* values, int shift,
                               const SelectState* state, int* histogram) {
  __shared__ int local[kRadixBins];
  local[threadIdx.x] = 0;
  __syncthreads();
  const SelectState search = *state;
  DOPPIO_KERNEL_LOOP(i, n) {
    const unsigned long long key = MagnitudeKey(values[i]);
    if ((key & search.mask) == search.prefix) {
      atomicAdd(&local[(key >> shift) & (kRadixBins - 1)], 1);
    }
  }
  __syncthreads();
  if (local[threadIdx.x] != 0) atomicAdd(&histogram[threadIdx.x], local[threadIdx.x]);
}

// The digit at `shift` of T: the bin, from the top, that holds the remaining-th entry.
__global__ void ChooseDigit(int shift, SelectState* state, int* histogram) {
  DOPPIO_KERNEL_LOOP(unused, 1) {
    long long above = 0;
    for (int b = kRadixBins - 1; b >= 0; --b) {
      if (above + histogram[b] >= state->remaining) {
        state->prefix |= static_cast<unsigned long long>(b) << shift;
        state->mask |= static_cast<unsigned long long>(kRadixBins - 1) << shift;
        state->remaining -= above;
        break;
      }
      above += histogram[b];
    }
    for (int b = 0; b < kRadixBins; ++b) histogram[b] = 0;
  }
}

// Per tile: the entries above T and those equal to it.
template <typename Dtype>
__global__ void TileCounts(long long n, long long tiles, const Dtype* values,
                           const SelectState* state, long long* counts) {
  __shared__ long long cache[kGpuThreads];
  const unsigned long long threshold = state->prefix;
  for (long long t = blockIdx.x; t < tiles; t += gridDim.x) {
    const long long end = min((t + 1) * kTile, n);
    long long above = 0, equal = 0;
    for (long long i = t * kTile + threadIdx.x; i < end; i += blockDim.x) {
      const unsigned long long key = MagnitudeKey(values[i]);
      above += key > threshold;
      equal += key == threshold;
    }
    above = BlockReduceSum(above, cache);
    equal = BlockReduceSum(equal, cache);
    if (threadIdx.x == 0) {
      counts[2 * t] = above;
      counts[2 * t + 1] = equal;
    }
  }
}

// The counts become exclusive prefix sums over the tiles (one block: each thread a run of
// tiles).
__global__ void TilePrefixes(long long tiles, long long* counts) {
  __shared__ long long run_above[kGpuThreads];
  __shared__ long long run_equal[kGpuThreads];
  const long long per_thread = (tiles + blockDim.x - 1) / blockDim.x;
  const long long begin = min(threadIdx.x * per_thread, tiles);
  const long long end = min(begin + per_thread, tiles);
  long long above = 0, equal = 0;
  for (long long t = begin; t < end; ++t) {
    above += counts[2 * t];
    equal += counts[2 * t + 1];
  }
  run_above[threadIdx.x] = above;
  run_equal[threadIdx.x] = equal;
  __syncthreads();
  if (threadIdx.x == 0) {
    long long total_above = 0, total_equal = 0;
    for (unsigned int j = 0; j < blockDim.x; ++j) {
      const long long a = run_above[j], e = run_equal[j];
      run_above[j] = total_above;
      run_equal[j] = total_equal;
      total_above += a;
      total_equal += e;
    }
  }
  __syncthreads();
  above = run_above[threadIdx.x];
  equal = run_equal[threadIdx.x];
  for (long long t = begin; t < end; ++t) {
    const long long a = counts[2 * t], e = counts[2 * t + 1];
    counts[2 * t] = above;
    counts[2 * t + 1] = equal;
    above += a;
    equal += e;
  }
}

// Each tile's chosen entries, at their place in index order: index, value, and the value
// taken out of the residual. The message's values follow its k
// indices at any byte alignment (the host's layout), hence memcpy.
template <typename Dtype>
__global__ void TileWrite(long long n, long long tiles, const SelectState* state,
                          const long long* counts, Dtype* values, std::int32_t* indices,
                          char* sent) {
  __shared__ int scan[kGpuThreads];
  const unsigned long long threshold = state->prefix;
  const long long take_equal = state->remaining;
  for (long long t = blockIdx.x; t < tiles; t += gridDim.x) {
    long long above_before = counts[2 * t], equal_before = counts[2 * t + 1];
    const long long end = min((t + 1) * kTile, n);
    for (long long base = t * kTile; base < end; base += blockDim.x) {
      const long long i = base + threadIdx.x;
      const unsigned long long key = i < end ? MagnitudeKey(values[i]) : 0;
      const int above = i < end && key > threshold;
      const int equal = i < end && key == threshold;
      // Both flags in one word (a block counts at most kGpuThreads of each): an inclusive
      // scan over the block.
      scan[threadIdx.x] = above | (equal << 16);
      __syncthreads();
      for (unsigned int offset = 1; offset < blockDim.x; offset <<= 1) {
        const int add = threadIdx.x >= offset ? scan[threadIdx.x - offset] : 0;
        __syncthreads();
        scan[threadIdx.x] += add;
        __syncthreads();
      }
      const int before = scan[threadIdx.x] - (above | (equal << 16));
      const int total = scan[blockDim.x - 1];
      __syncthreads();
      const long long my_above = above_before + (before & 0xffff);
      const long long my_equal = equal_before + (before >> 16);
      if (above || (equal && my_equal < take_equal)) {
        const long long position = my_above + min(my_equal, take_equal);
        const Dtype value = values[i];
        indices[position] = static_cast<std::int32_t>(i);
        memcpy(sent + position * sizeof(Dtype), &value, sizeof(Dtype));
        // Sent: no longer owed.
        values[i] = 0;
      }
      above_before += total & 0xffff;
      equal_before += total >> 16;
    }
  }
}

// One rank's message added into the bucket (its indices are distinct).
template <typename Dtype>
__global__ void ScatterAdd(long long k, const char* message, Dtype* bucket) {
  const auto* indices = reinterpret_cast<const std::int32_t*>(message);
  const char* values = message + k * sizeof(std::int32_t);
  DOPPIO_KERNEL_LOOP(j, k) {
    Dtype value;
    memcpy(&value, values + j * sizeof(Dtype), sizeof(Dtype));
    bucket[indices[j]] += value;
  }
}

// a x b rounded on its own, as the host rounds it: a GPU would fuse it with the addition or
// subtraction that follows (the emulation compiles these kernels for the host, which does
// not fuse).
__device__ __forceinline__ float Product(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
__device__ __forceinline__ double Product(double a, double b) {
#ifdef __CUDA_ARCH__
  return __dmul_rn(a, b);
#else
  return a * b;
#endif
}

// The momentum correction's accumulation: velocity <- momentum x velocity + gradient, and
// the velocity into the residual (the host's loop).
template <typename Dtype>
__global__ void AccumulateVelocity(long long n, Dtype momentum, const Dtype* gradient,
                                   Dtype* velocity, Dtype* residual) {
  DOPPIO_KERNEL_LOOP(i, n) {
    velocity[i] = Product(momentum, velocity[i]) + gradient[i];
    residual[i] += velocity[i];
  }
}

// The sum less the momentum's share of the last step, which becomes the sum's mean.
template <typename Dtype>
__global__ void CorrectMomentum(long long n, Dtype share, Dtype ranks, Dtype* last, Dtype* bucket) {
  DOPPIO_KERNEL_LOOP(i, n) {
    const Dtype sum = bucket[i];
    bucket[i] = sum - Product(share, last[i]);
    last[i] = sum / ranks;
  }
}

}  // namespace

template <typename Dtype>
void TopKCompressor<Dtype>::Select_gpu(const Dtype* bucket, char* message) {
  GpuContext& gpu = *this->gpu_;
  const auto n = static_cast<long long>(count_);
  const auto k = static_cast<long long>(k_);
  const long long tiles = (n + kTile - 1) / kTile;
  constexpr std::size_t kStateBytes = 64;
  if (!scratch_) {
    scratch_ = std::make_unique<SyncedMemory>(kStateBytes + kRadixBins * sizeof(int) +
                                              2 * tiles * sizeof(long long));
  }
  char* base = static_cast<char*>(scratch_->mutable_gpu_data(gpu));
  auto* state = reinterpret_cast<SelectState*>(base);
  auto* histogram = reinterpret_cast<int*>(base + kStateBytes);
  auto* counts = reinterpret_cast<long long*>(base + kStateBytes + kRadixBins * sizeof(int));
  Dtype* residual = this->mutable_residual();
  Dtype* velocity = corrects_momentum() ? residual + count_ : nullptr;
  // The gradient the rank would send without compression (or its velocity), plus what it
  // still owes.
  if (velocity) {
    LaunchKernel("AccumulateVelocity", gpu, n, AccumulateVelocity<Dtype>, n, momentum_, bucket,
                 velocity, residual);
  } else {
    gpu_add(gpu, static_cast<int>(n), residual, bucket, residual);
  }
  LaunchKernel("SelectInit", gpu, kRadixBins, SelectInit, k, state, histogram);
  for (int shift = 8 * static_cast<int>(sizeof(typename MagnitudeBits<Dtype>::Key)) - kRadixBits;
       shift >= 0; shift -= kRadixBits) {
    LaunchKernel("DigitHistogram", gpu, n, DigitHistogram<Dtype>, n, residual, shift, state,
                 histogram);
    LaunchKernel("ChooseDigit", gpu, 1, ChooseDigit, shift, state, histogram);
  }
  DOPPIO_LAUNCH(TileCounts<Dtype>, GpuRowBlocks(tiles), kGpuThreads, gpu.stream())
  (n, tiles, residual, state, counts);
  DOPPIO_CUDA_POST_KERNEL_CHECK("TileCounts");
  DOPPIO_LAUNCH(TilePrefixes, 1, kGpuThreads, gpu.stream())(tiles, counts);
  DOPPIO_CUDA_POST_KERNEL_CHECK("TilePrefixes");
  DOPPIO_LAUNCH(TileWrite<Dtype>, GpuRowBlocks(tiles), kGpuThreads, gpu.stream())
  (n, tiles, state, counts, residual, reinterpret_cast<std::int32_t*>(message),
   message + k * sizeof(std::int32_t));
  DOPPIO_CUDA_POST_KERNEL_CHECK("TileWrite");
}

template <typename Dtype>
void TopKCompressor<Dtype>::Sum_gpu(const char* gathered, int ranks, Dtype* bucket) {
  GpuContext& gpu = *this->gpu_;
  gpu_set(gpu, static_cast<int>(count_), Dtype(0), bucket);
  const auto k = static_cast<long long>(k_);
  // Rank by rank, as the host adds them.
  for (int r = 0; r < ranks; ++r) {
    LaunchKernel("ScatterAdd", gpu, k, ScatterAdd<Dtype>, k, gathered + r * wire_.size(), bucket);
  }
  if (!corrects_momentum()) return;
  const auto n = static_cast<long long>(count_);
  LaunchKernel("CorrectMomentum", gpu, n, CorrectMomentum<Dtype>, n,
               momentum_ * static_cast<Dtype>(ranks), static_cast<Dtype>(ranks),
               last_step_.mutable_gpu_data(gpu), bucket);
}

template void TopKCompressor<float>::Select_gpu(const float*, char*);
template void TopKCompressor<double>::Select_gpu(const double*, char*);
template void TopKCompressor<float>::Sum_gpu(const char*, int, float*);
template void TopKCompressor<double>::Sum_gpu(const char*, int, double*);

}  // namespace doppio
