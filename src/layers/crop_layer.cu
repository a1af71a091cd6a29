#include "doppio/core/layer_kernels.cuh"
#include "doppio/layers/crop_layer.hpp"
#include "doppio/util/math_functions.hpp"

namespace doppio {

namespace {
// The window as kernel arguments: top shape, offsets into bottom and bottom strides.
struct CropWindow {
  int axes;
  int top_shape[kMaxBlobAxes];
  int offsets[kMaxBlobAxes];
  int bottom_strides[kMaxBlobAxes];
};

// The bottom index of top element i.
__device__ __forceinline__ long long SourceIndex(long long i, const CropWindow& w) {
  long long source = 0;
  for (int a = w.axes - 1; a >= 0; --a) {
    const long long index = i % w.top_shape[a];
    i /= w.top_shape[a];
    source += (index + w.offsets[a]) * w.bottom_strides[a];
  }
  return source;
}

template <typename Dtype>
__global__ void CropForward(long long n, CropWindow w, const Dtype* bottom, Dtype* top) {
  DOPPIO_KERNEL_LOOP(i, n) { top[i] = bottom[SourceIndex(i, w)]; }
}

template <typename Dtype>
__global__ void CropBackward(long long n, CropWindow w, const Dtype* top_diff, Dtype* bottom_diff) {
  DOPPIO_KERNEL_LOOP(i, n) { bottom_diff[SourceIndex(i, w)] = top_diff[i]; }
}

CropWindow MakeWindow(const std::vector<int>& top_shape, const std::vector<int>& offsets,
                      const std::vector<int>& strides) {
  CropWindow w{};
  w.axes = static_cast<int>(top_shape.size());
  for (int a = 0; a < w.axes; ++a) {
    w.top_shape[a] = top_shape[a];
    w.offsets[a] = offsets[a];
    w.bottom_strides[a] = strides[a];
  }
  return w;
}
}  // namespace

template <typename Dtype>
void CropLayer<Dtype>::Forward_gpu(const BlobVec& bottom, const BlobVec& top) {
  const long long count = top[0]->count();
  if (count == 0) return;
  GpuContext& gpu = this->gpu();
  LaunchKernel("CropForward", gpu, count, CropForward<Dtype>, count,
               MakeWindow(top_shape_, offsets_, bottom_strides_), bottom[0]->gpu_data(gpu),
               top[0]->mutable_gpu_data(gpu));
}

template <typename Dtype>
void CropLayer<Dtype>::Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                                    const BlobVec& bottom) {
  if (!propagate_down[0] || bottom[0]->count() == 0) return;
  GpuContext& gpu = this->gpu();
  Dtype* bottom_diff = bottom[0]->mutable_gpu_diff(gpu);
  gpu_set(gpu, bottom[0]->count(), Dtype(0), bottom_diff);
  const long long count = top[0]->count();
  if (count == 0) return;
  LaunchKernel("CropBackward", gpu, count, CropBackward<Dtype>, count,
               MakeWindow(top_shape_, offsets_, bottom_strides_), top[0]->gpu_diff(gpu),
               bottom_diff);
}

DOPPIO_INSTANTIATE_LAYER_GPU_FUNCS(CropLayer);

}  // namespace doppio
