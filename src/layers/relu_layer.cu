#include "doppio/core/gpu_storage.hpp"
#include "doppio/core/layer_kernels.cuh"
#include "doppio/device/gpu_half.cuh"
#include "doppio/layers/relu_layer.hpp"

namespace doppio {

namespace {
// S: the storage of the tensors (Dtype, or 16 bits under BF16/FP16); the math is Dtype's.
template <typename S, typename Dtype>
__global__ void ReLUForward(long long n, const S* x, Dtype slope, S* y) {
  DOPPIO_KERNEL_LOOP(i, n) { y[i] = StoreAs<S>::From(ReLUValue(Load(x[i]), slope)); }
}

template <typename S, typename Dtype>
__global__ void ReLUBackward(long long n, const S* x, const S* dy, Dtype slope, S* dx) {
  DOPPIO_KERNEL_LOOP(i, n) {
    const Dtype g = Load(dy[i]);
    dx[i] = StoreAs<S>::From(Load(x[i]) > Dtype(0) ? g : slope * g);
  }
}
}  // namespace

template <typename Dtype>
void ReLULayer<Dtype>::Forward_gpu(const BlobVec& bottom, const BlobVec& top) {
  GpuContext& gpu = this->gpu();
  const long long count = bottom[0]->count();
  const GpuStorage storage = gpu_storage();
  if (storage != GpuStorage::kFloat32) {
    WithStorageType<Dtype>(storage, [&](auto type) {
      using S = decltype(type);
      const auto* x = static_cast<const S*>(input_reader_.Read(bottom[0]->data(), storage, gpu));
      auto* y = static_cast<S*>(top[0]->data()->mutable_raw_gpu_data(gpu, storage));
      LaunchKernel("ReLUForward", gpu, count, ReLUForward<S, Dtype>, count, x, negative_slope_, y);
    });
    return;
  }
  // As on the CPU: only a negative slope loses the input's sign in place.
  if (negative_slope_ < 0) this->KeepInputIfInPlace_gpu(*bottom[0], *top[0]);
  LaunchKernel("ReLUForward", gpu, count, ReLUForward<Dtype, Dtype>, count,
               bottom[0]->gpu_data(gpu), negative_slope_, top[0]->mutable_gpu_data(gpu));
}

template <typename Dtype>
void ReLULayer<Dtype>::Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                                    const BlobVec& bottom) {
  if (!propagate_down[0]) return;
  GpuContext& gpu = this->gpu();
  const long long count = bottom[0]->count();
  const GpuStorage storage = gpu_storage();
  if (storage != GpuStorage::kFloat32) {
    WithStorageType<Dtype>(storage, [&](auto type) {
      using S = decltype(type);
      // In place the bottom's data is the output, whose sign is the input's (slope >= 0).
      const auto* x = static_cast<const S*>(input_reader_.Read(bottom[0]->data(), storage, gpu));
      const auto* dy = static_cast<const S*>(diff_reader_.Read(top[0]->diff(), storage, gpu));
      auto* dx = static_cast<S*>(bottom[0]->diff()->mutable_raw_gpu_data(gpu, storage));
      LaunchKernel("ReLUBackward", gpu, count, ReLUBackward<S, Dtype>, count, x, dy,
                   negative_slope_, dx);
    });
    return;
  }
  const Dtype* x = this->ForwardInput_gpu(*bottom[0]);
  LaunchKernel("ReLUBackward", gpu, count, ReLUBackward<Dtype, Dtype>, count, x,
               top[0]->gpu_diff(gpu), negative_slope_, bottom[0]->mutable_gpu_diff(gpu));
}

DOPPIO_INSTANTIATE_LAYER_GPU_FUNCS(ReLULayer);

}  // namespace doppio
