#include "doppio/core/layer_kernels.cuh"
#include "doppio/device/gpu_half.cuh"
#include "doppio/layers/split_layer.hpp"
#include "doppio/util/math_functions.hpp"

namespace doppio {

namespace {
// y = a + b in 16 bits, summed in fp32.
template <typename S>
__global__ void SumTwo(long long n, const S* a, const S* b, S* y) {
  DOPPIO_KERNEL_LOOP(i, n) { y[i] = StoreAs<S>::From(Load(a[i]) + Load(b[i])); }
}
}  // namespace

template <typename Dtype>
void SplitLayer<Dtype>::Forward_gpu(const BlobVec& bottom, const BlobVec& top) {
  // The tops share the bottom's data.
}

template <typename Dtype>
void SplitLayer<Dtype>::Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                                     const BlobVec& bottom) {
  const int count = bottom[0]->count();
  if (!propagate_down[0] || count == 0) return;
  GpuContext& gpu = this->gpu();
  const GpuStorage storage = GpuStorageOf(*this);
  if (storage != GpuStorage::kFloat32) {
    // Two tops (the common fan-out) round once; each further top adds one rounding. The
    // inputs first: a memory plan may lend a top's diff buffer to the bottom's.
    diff_readers_.resize(top.size());
    std::vector<const void*> diffs;
    for (std::size_t i = 0; i < top.size(); ++i) {
      diffs.push_back(diff_readers_[i].Read(top[i]->diff(), storage, gpu));
    }
    void* bottom_diff = bottom[0]->diff()->mutable_raw_gpu_data(gpu, storage);
    if (top.size() == 1) {
      gpu_convert(gpu, count, storage, diffs[0], storage, bottom_diff);
      return;
    }
    WithStorageType<float>(storage, [&](auto type) {
      using S = decltype(type);
      LaunchKernel("SumTwo", gpu, count, SumTwo<S>, static_cast<long long>(count),
                   static_cast<const S*>(diffs[0]), static_cast<const S*>(diffs[1]),
                   static_cast<S*>(bottom_diff));
      for (std::size_t i = 2; i < top.size(); ++i) {
        LaunchKernel("SumTwo", gpu, count, SumTwo<S>, static_cast<long long>(count),
                     static_cast<const S*>(bottom_diff), static_cast<const S*>(diffs[i]),
                     static_cast<S*>(bottom_diff));
      }
    });
    return;
  }
  Dtype* bottom_diff = bottom[0]->mutable_gpu_diff(gpu);
  if (top.size() == 1) {
    gpu_copy(gpu, count, top[0]->gpu_diff(gpu), bottom_diff);
    return;
  }
  gpu_add(gpu, count, top[0]->gpu_diff(gpu), top[1]->gpu_diff(gpu), bottom_diff);
  for (std::size_t i = 2; i < top.size(); ++i) {
    gpu_axpy(gpu, count, Dtype(1), top[i]->gpu_diff(gpu), bottom_diff);
  }
}

DOPPIO_INSTANTIATE_LAYER_GPU_FUNCS(SplitLayer);

}  // namespace doppio
