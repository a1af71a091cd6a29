#include "doppio/core/layer_kernels.cuh"
#include "doppio/layers/tile_layer.hpp"

namespace doppio {

namespace {
// top is (outer, tiles, inner): every tile repeats the bottom's (outer, inner) row.
template <typename Dtype>
__global__ void TileForward(long long n, int tiles, int inner, const Dtype* bottom, Dtype* top) {
  DOPPIO_KERNEL_LOOP(i, n) {
    const long long k = i % inner;
    const long long outer = i / (static_cast<long long>(inner) * tiles);
    top[i] = bottom[outer * inner + k];
  }
}

// Each bottom element sums its copies, in tile order (as the CPU code does).
template <typename Dtype>
__global__ void TileBackward(long long n, int tiles, int inner, const Dtype* top_diff,
                             Dtype* bottom_diff) {
  DOPPIO_KERNEL_LOOP(i, n) {
    const long long k = i % inner;
    const long long outer = i / inner;
    const Dtype* src = top_diff + outer * tiles * inner + k;
    Dtype sum = src[0];
    for (int t = 1; t < tiles; ++t) sum += src[static_cast<long long>(t) * inner];
    bottom_diff[i] = sum;
  }
}
}  // namespace

template <typename Dtype>
void TileLayer<Dtype>::Forward_gpu(const BlobVec& bottom, const BlobVec& top) {
  const long long count = top[0]->count();
  if (count == 0) return;
  GpuContext& gpu = this->gpu();
  LaunchKernel("TileForward", gpu, count, TileForward<Dtype>, count, tiles_, inner_dim_,
               bottom[0]->gpu_data(gpu), top[0]->mutable_gpu_data(gpu));
}

template <typename Dtype>
void TileLayer<Dtype>::Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                                    const BlobVec& bottom) {
  const long long count = bottom[0]->count();
  if (!propagate_down[0] || count == 0) return;
  GpuContext& gpu = this->gpu();
  LaunchKernel("TileBackward", gpu, count, TileBackward<Dtype>, count, tiles_, inner_dim_,
               top[0]->gpu_diff(gpu), bottom[0]->mutable_gpu_diff(gpu));
}

DOPPIO_INSTANTIATE_LAYER_GPU_FUNCS(TileLayer);

}  // namespace doppio
