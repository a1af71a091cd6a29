#include <glog/logging.h>

#include "doppio/core/layer_kernels.cuh"
#include "doppio/device/gpu_half.cuh"
#include "doppio/layers/dropout_layer.hpp"
#include "doppio/util/math_functions.hpp"

namespace doppio {

namespace {
// The mask of DropoutLayer::Forward_cpu: unit u of a sample is kept when the sample's word u
// is below `keep`.
__global__ void DropoutMask(long long n, long long per_sample, unsigned long long first,
                            unsigned long long seed, unsigned long long keep, unsigned int* mask) {
  DOPPIO_KERNEL_LOOP(i, n) {
    const long long sample = i / per_sample, unit = i - sample * per_sample;
    mask[i] = SampleWord(seed, first + static_cast<unsigned long long>(sample),
                         static_cast<unsigned long long>(unit)) < keep
                  ? 1u
                  : 0u;
  }
}

// Forward and backward alike: y = mask ? x * scale : 0, with no mask: x * scale. S: the
// storage (Dtype, or 16 bits under BF16/FP16); the math is Dtype's.
template <typename S, typename Dtype>
__global__ void MaskAndScale(long long n, const S* x, const unsigned int* mask, Dtype scale, S* y) {
  DOPPIO_KERNEL_LOOP(i, n) {
    y[i] = StoreAs<S>::From(!mask || mask[i] ? Load(x[i]) * scale : Dtype(0));
  }
}
}  // namespace

template <typename Dtype>
void DropoutLayer<Dtype>::Forward_gpu(const BlobVec& bottom, const BlobVec& top) {
  GpuContext& gpu = this->gpu();
  const int count = bottom[0]->count();
  const GpuStorage storage = GpuStorageOf(*this);
  const unsigned int* mask = nullptr;
  Dtype scale = test_scale_;
  if (this->phase_ == TRAIN) {
    const std::size_t bytes = sizeof(unsigned int) * static_cast<std::size_t>(count);
    if (!mask_gpu_ || mask_gpu_->size() < bytes) mask_gpu_ = std::make_shared<SyncedMemory>(bytes);
    auto* train_mask = static_cast<unsigned int*>(mask_gpu_->mutable_gpu_data(gpu));
    const int num = bottom[0]->num_axes() > 0 ? bottom[0]->shape(0) : 1;
    const std::uint64_t first = this->FirstSamplePosition(num);
    LaunchKernel("DropoutMask", gpu, count, DropoutMask, static_cast<long long>(count),
                 static_cast<long long>(num > 0 ? count / num : 0),
                 static_cast<unsigned long long>(first),
                 static_cast<unsigned long long>(MaskSeed()),
                 static_cast<unsigned long long>(BernoulliThreshold(1.0 - ratio_)), train_mask);
    mask = train_mask;
    scale = train_scale_;
  } else if (test_scale_ == Dtype(1) && storage == GpuStorage::kFloat32) {
    gpu_copy(gpu, count, bottom[0]->gpu_data(gpu), top[0]->mutable_gpu_data(gpu));
    return;
  }
  WithStorageType<Dtype>(storage, [&](auto type) {
    using S = decltype(type);
    const auto* x = static_cast<const S*>(
        storage == GpuStorage::kFloat32 ? bottom[0]->data()->gpu_data(gpu)
                                        : input_reader_.Read(bottom[0]->data(), storage, gpu));
    auto* y = static_cast<S*>(top[0]->data()->mutable_raw_gpu_data(gpu, storage));
    LaunchKernel("MaskAndScale", gpu, count, MaskAndScale<S, Dtype>, static_cast<long long>(count),
                 x, mask, scale, y);
  });
}

template <typename Dtype>
void DropoutLayer<Dtype>::Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                                       const BlobVec& bottom) {
  if (!propagate_down[0]) return;
  GpuContext& gpu = this->gpu();
  const int count = bottom[0]->count();
  const GpuStorage storage = GpuStorageOf(*this);
  const unsigned int* mask = nullptr;
  Dtype scale = test_scale_;
  if (this->phase_ == TRAIN) {
    CHECK(mask_gpu_) << this->Describe() << ": Backward_gpu without a Forward_gpu";
    mask = static_cast<const unsigned int*>(mask_gpu_->gpu_data(gpu));
    scale = train_scale_;
  } else if (test_scale_ == Dtype(1) && storage == GpuStorage::kFloat32) {
    gpu_copy(gpu, count, top[0]->gpu_diff(gpu), bottom[0]->mutable_gpu_diff(gpu));
    return;
  }
  WithStorageType<Dtype>(storage, [&](auto type) {
    using S = decltype(type);
    const auto* dy = static_cast<const S*>(storage == GpuStorage::kFloat32
                                               ? top[0]->diff()->gpu_data(gpu)
                                               : diff_reader_.Read(top[0]->diff(), storage, gpu));
    auto* dx = static_cast<S*>(bottom[0]->diff()->mutable_raw_gpu_data(gpu, storage));
    LaunchKernel("MaskAndScale", gpu, count, MaskAndScale<S, Dtype>, static_cast<long long>(count),
                 dy, mask, scale, dx);
  });
}

DOPPIO_INSTANTIATE_LAYER_GPU_FUNCS(DropoutLayer);

}  // namespace doppio
