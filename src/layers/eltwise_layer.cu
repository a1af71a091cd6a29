#include <glog/logging.h>

#include "doppio/core/layer_kernels.cuh"
#include "doppio/device/gpu_half.cuh"
#include "doppio/layers/eltwise_layer.hpp"
#include "doppio/util/math_functions.hpp"

namespace doppio {

namespace {
template <typename Dtype>
__global__ void MaxFirstPair(long long n, const Dtype* a, const Dtype* b, Dtype* y, int* mask) {
  DOPPIO_KERNEL_LOOP(i, n) {
    const bool first = a[i] > b[i];
    y[i] = first ? a[i] : b[i];
    mask[i] = first ? 0 : 1;
  }
}

template <typename Dtype>
__global__ void MaxNext(long long n, const Dtype* c, int index, Dtype* y, int* mask) {
  DOPPIO_KERNEL_LOOP(i, n) {
    if (c[i] > y[i]) {
      y[i] = c[i];
      mask[i] = index;
    }
  }
}

// y = ca a + cb b in 16 bits, summed in fp32.
template <typename S>
__global__ void WeightedSum16(long long n, float ca, const S* a, float cb, const S* b, S* y) {
  DOPPIO_KERNEL_LOOP(i, n) { y[i] = StoreAs<S>::From(ca * Load(a[i]) + cb * Load(b[i])); }
}

template <typename S>
__global__ void Scale16(long long n, float c, const S* x, S* y) {
  DOPPIO_KERNEL_LOOP(i, n) { y[i] = StoreAs<S>::From(c * Load(x[i])); }
}

template <typename Dtype>
__global__ void MaxBackward(long long n, const Dtype* dy, const int* mask, int index, Dtype* dx) {
  DOPPIO_KERNEL_LOOP(i, n) { dx[i] = mask[i] == index ? dy[i] : Dtype(0); }
}
}  // namespace

template <typename Dtype>
void EltwiseLayer<Dtype>::Forward_gpu16(const BlobVec& bottom, const BlobVec& top,
                                        GpuStorage storage) {
  GpuContext& gpu = this->gpu();
  const long long count = top[0]->count();
  const void* a = input_readers_[0].Read(bottom[0]->data(), storage, gpu);
  const void* b = input_readers_[1].Read(bottom[1]->data(), storage, gpu);
  void* y = top[0]->data()->mutable_raw_gpu_data(gpu, storage);
  WithStorageType<float>(storage, [&](auto type) {
    using S = decltype(type);
    LaunchKernel("WeightedSum16", gpu, count, WeightedSum16<S>, count,
                 static_cast<float>(coeffs_[0]), static_cast<const S*>(a),
                 static_cast<float>(coeffs_[1]), static_cast<const S*>(b), static_cast<S*>(y));
  });
}

template <typename Dtype>
void EltwiseLayer<Dtype>::Backward_gpu16(const BlobVec& top,
                                         const std::vector<bool>& propagate_down,
                                         const BlobVec& bottom, GpuStorage storage) {
  GpuContext& gpu = this->gpu();
  const long long count = top[0]->count();
  const void* dy = diff_reader_.Read(top[0]->diff(), storage, gpu);
  // In place, bottom 0's diff is the top diff: it is written last.
  for (int i = 1; i >= 0; --i) {
    if (!propagate_down[i]) continue;
    void* dx = bottom[i]->diff()->mutable_raw_gpu_data(gpu, storage);
    WithStorageType<float>(storage, [&](auto type) {
      using S = decltype(type);
      LaunchKernel("Scale16", gpu, count, Scale16<S>, count, static_cast<float>(coeffs_[i]),
                   static_cast<const S*>(dy), static_cast<S*>(dx));
    });
  }
}

template <typename Dtype>
void EltwiseLayer<Dtype>::Forward_gpu(const BlobVec& bottom, const BlobVec& top) {
  const int count = top[0]->count();
  if (count == 0) return;
  const GpuStorage storage = gpu_storage();
  if (storage != GpuStorage::kFloat32) {
    Forward_gpu16(bottom, top, storage);
    return;
  }
  GpuContext& gpu = this->gpu();
  Dtype* top_data = top[0]->mutable_gpu_data(gpu);
  switch (op_) {
    case EltwiseParameter::PROD:
      gpu_mul(gpu, count, bottom[0]->gpu_data(gpu), bottom[1]->gpu_data(gpu), top_data);
      for (std::size_t i = 2; i < bottom.size(); ++i) {
        gpu_mul(gpu, count, static_cast<const Dtype*>(top_data), bottom[i]->gpu_data(gpu),
                top_data);
      }
      break;
    case EltwiseParameter::SUM:
      gpu_scale(gpu, count, coeffs_[0], bottom[0]->gpu_data(gpu), top_data);
      for (std::size_t i = 1; i < bottom.size(); ++i) {
        gpu_axpy(gpu, count, coeffs_[i], bottom[i]->gpu_data(gpu), top_data);
      }
      break;
    case EltwiseParameter::MAX: {
      const std::size_t bytes = sizeof(int) * static_cast<std::size_t>(count);
      if (!max_idx_gpu_ || max_idx_gpu_->size() < bytes) {
        max_idx_gpu_ = std::make_shared<SyncedMemory>(bytes);
      }
      int* mask = static_cast<int*>(max_idx_gpu_->mutable_gpu_data(gpu));
      LaunchKernel("MaxFirstPair", gpu, count, MaxFirstPair<Dtype>, static_cast<long long>(count),
                   bottom[0]->gpu_data(gpu), bottom[1]->gpu_data(gpu), top_data, mask);
      for (std::size_t i = 2; i < bottom.size(); ++i) {
        LaunchKernel("MaxNext", gpu, count, MaxNext<Dtype>, static_cast<long long>(count),
                     bottom[i]->gpu_data(gpu), static_cast<int>(i), top_data, mask);
      }
      break;
    }
    default:
      DOPPIO_FAIL() << this->Describe() << ": unknown eltwise_param.operation " << op_;
  }
}

template <typename Dtype>
void EltwiseLayer<Dtype>::Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                                       const BlobVec& bottom) {
  const int count = top[0]->count();
  if (count == 0) return;
  const GpuStorage storage = gpu_storage();
  if (storage != GpuStorage::kFloat32) {
    Backward_gpu16(top, propagate_down, bottom, storage);
    return;
  }
  GpuContext& gpu = this->gpu();
  const Dtype* top_diff = top[0]->gpu_diff(gpu);
  // In place, bottom 0's diff is the top diff, which the other bottoms' gradients still read:
  // it is written last.
  for (int i = static_cast<int>(bottom.size()) - 1; i >= 0; --i) {
    if (!propagate_down[i]) continue;
    Dtype* diff = bottom[i]->mutable_gpu_diff(gpu);
    switch (op_) {
      case EltwiseParameter::PROD:
        DOPPIO_ENSURE(bottom[0] != top[0])
            << this->Describe() << ": operation PROD in place has overwritten bottom 0, which "
            << "the gradient needs; give the top a blob of its own";
        if (stable_prod_grad_) {
          bool first = true;
          for (int j = 0; j < static_cast<int>(bottom.size()); ++j) {
            if (j == i) continue;
            if (first) {
              gpu_copy(gpu, count, bottom[j]->gpu_data(gpu), diff);
              first = false;
            } else {
              gpu_mul(gpu, count, bottom[j]->gpu_data(gpu), static_cast<const Dtype*>(diff), diff);
            }
          }
        } else {
          gpu_div(gpu, count, top[0]->gpu_data(gpu), bottom[i]->gpu_data(gpu), diff);
        }
        gpu_mul(gpu, count, static_cast<const Dtype*>(diff), top_diff, diff);
        break;
      case EltwiseParameter::SUM:
        if (coeffs_[i] == Dtype(1)) {
          gpu_copy(gpu, count, top_diff, diff);
        } else {
          gpu_scale(gpu, count, coeffs_[i], top_diff, diff);
        }
        break;
      case EltwiseParameter::MAX: {
        CHECK(max_idx_gpu_) << this->Describe() << ": Backward_gpu without a Forward_gpu";
        const int* mask = static_cast<const int*>(max_idx_gpu_->gpu_data(gpu));
        LaunchKernel("MaxBackward", gpu, count, MaxBackward<Dtype>, static_cast<long long>(count),
                     top_diff, mask, i, diff);
        break;
      }
      default:
        DOPPIO_FAIL() << this->Describe() << ": unknown eltwise_param.operation " << op_;
    }
  }
}

DOPPIO_INSTANTIATE_LAYER_GPU_FUNCS(EltwiseLayer);

}  // namespace doppio
