#include "doppio/core/index_upload.cuh"
#include "doppio/core/layer_kernels.cuh"
#include "doppio/layers/filter_layer.hpp"

namespace doppio {

namespace {
template <typename Dtype>
__global__ void FilterForward(long long n, int inner, const int* kept, const Dtype* in,
                              Dtype* out) {
  DOPPIO_KERNEL_LOOP(i, n) {
    out[i] = in[static_cast<long long>(kept[i / inner]) * inner + i % inner];
  }
}

template <typename Dtype>
__global__ void FilterBackward(long long n, int inner, const int* position, const Dtype* top_diff,
                               Dtype* bottom_diff) {
  DOPPIO_KERNEL_LOOP(i, n) {
    const int row = position[i / inner];
    bottom_diff[i] = row < 0 ? Dtype(0) : top_diff[static_cast<long long>(row) * inner + i % inner];
  }
}
}  // namespace

template <typename Dtype>
void FilterLayer<Dtype>::Forward_gpu(const BlobVec& bottom, const BlobVec& top) {
  GpuContext& gpu = this->gpu();
  const int* kept = UploadIndices(gpu, kept_, &kept_device_);
  for (std::size_t t = 0; t < top.size(); ++t) {
    const long long n = top[t]->count();
    LaunchKernel("FilterForward", gpu, n, FilterForward<Dtype>, n, bottom[t]->count(1), kept,
                 bottom[t]->gpu_data(gpu), top[t]->mutable_gpu_data(gpu));
  }
}

template <typename Dtype>
void FilterLayer<Dtype>::Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                                      const BlobVec& bottom) {
  CheckSelectorNotPropagated(propagate_down);
  GpuContext& gpu = this->gpu();
  std::vector<int> position(bottom.back()->shape(0), -1);
  for (std::size_t k = 0; k < kept_.size(); ++k) position[kept_[k]] = static_cast<int>(k);
  const int* device_position = UploadIndices(gpu, position, &position_device_);
  for (std::size_t t = 0; t < top.size(); ++t) {
    if (!propagate_down[t]) continue;
    const long long n = bottom[t]->count();
    LaunchKernel("FilterBackward", gpu, n, FilterBackward<Dtype>, n, bottom[t]->count(1),
                 device_position, top[t]->gpu_diff(gpu), bottom[t]->mutable_gpu_diff(gpu));
  }
}

DOPPIO_INSTANTIATE_LAYER_GPU_FUNCS(FilterLayer);

}  // namespace doppio
