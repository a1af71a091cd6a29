#include <glog/logging.h>

#include "doppio/core/layer_kernels.cuh"
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

template <typename Dtype>
__global__ void DropoutForward(long long n, const Dtype* x, const unsigned int* mask, Dtype scale,
                               Dtype* y) {
  DOPPIO_KERNEL_LOOP(i, n) { y[i] = mask[i] ? x[i] * scale : Dtype(0); }
}

template <typename Dtype>
__global__ void DropoutBackward(long long n, const Dtype* dy, const unsigned int* mask, Dtype scale,
                                Dtype* dx) {
  DOPPIO_KERNEL_LOOP(i, n) { dx[i] = mask[i] ? dy[i] * scale : Dtype(0); }
}
}  // namespace

template <typename Dtype>
void DropoutLayer<Dtype>::Forward_gpu(const BlobVec& bottom, const BlobVec& top) {
  GpuContext& gpu = this->gpu();
  const int count = bottom[0]->count();
  const Dtype* x = bottom[0]->gpu_data(gpu);
  Dtype* y = top[0]->mutable_gpu_data(gpu);
  if (this->phase_ == TRAIN) {
    const std::size_t bytes = sizeof(unsigned int) * static_cast<std::size_t>(count);
    if (!mask_gpu_ || mask_gpu_->size() < bytes) mask_gpu_ = std::make_shared<SyncedMemory>(bytes);
    unsigned int* mask = static_cast<unsigned int*>(mask_gpu_->mutable_gpu_data(gpu));
    const int num = bottom[0]->num_axes() > 0 ? bottom[0]->shape(0) : 1;
    const std::uint64_t first = this->FirstSamplePosition(num);
    LaunchKernel("DropoutMask", gpu, count, DropoutMask, static_cast<long long>(count),
                 static_cast<long long>(num > 0 ? count / num : 0),
                 static_cast<unsigned long long>(first),
                 static_cast<unsigned long long>(MaskSeed()),
                 static_cast<unsigned long long>(BernoulliThreshold(1.0 - ratio_)), mask);
    LaunchKernel("DropoutForward", gpu, count, DropoutForward<Dtype>, static_cast<long long>(count),
                 x, static_cast<const unsigned int*>(mask), train_scale_, y);
  } else if (test_scale_ != Dtype(1)) {
    gpu_scale(gpu, count, test_scale_, x, y);
  } else {
    gpu_copy(gpu, count, x, y);
  }
}

template <typename Dtype>
void DropoutLayer<Dtype>::Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                                       const BlobVec& bottom) {
  if (!propagate_down[0]) return;
  GpuContext& gpu = this->gpu();
  const int count = bottom[0]->count();
  const Dtype* dy = top[0]->gpu_diff(gpu);
  Dtype* dx = bottom[0]->mutable_gpu_diff(gpu);
  if (this->phase_ == TRAIN) {
    CHECK(mask_gpu_) << this->Describe() << ": Backward_gpu without a Forward_gpu";
    const unsigned int* mask = static_cast<const unsigned int*>(mask_gpu_->gpu_data(gpu));
    LaunchKernel("DropoutBackward", gpu, count, DropoutBackward<Dtype>,
                 static_cast<long long>(count), dy, mask, train_scale_, dx);
  } else if (test_scale_ != Dtype(1)) {
    gpu_scale(gpu, count, test_scale_, dy, dx);
  } else {
    gpu_copy(gpu, count, dy, dx);
  }
}

DOPPIO_INSTANTIATE_LAYER_GPU_FUNCS(DropoutLayer);

}  // namespace doppio
