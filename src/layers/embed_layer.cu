#include "doppio/core/layer_kernels.cuh"
#include "doppio/layers/embed_layer.hpp"
#include "doppio/util/math_functions.hpp"

namespace doppio {

namespace {
// The row an index value selects, or -1 when it is not an integer in [0, input_dim).
template <typename Dtype>
__device__ __forceinline__ int EmbedRow(Dtype value, int input_dim) {
  const bool valid = value >= Dtype(0) && value < static_cast<Dtype>(input_dim) &&
                     static_cast<Dtype>(static_cast<int>(value)) == value;
  return valid ? static_cast<int>(value) : -1;
}

template <typename Dtype>
__global__ void EmbedForward(long long n, int num_output, int input_dim, const Dtype* indices,
                             const Dtype* weight, const Dtype* bias, Dtype* top, int* bad) {
  DOPPIO_KERNEL_LOOP(i, n) {
    const long long item = i / num_output;
    const int j = static_cast<int>(i % num_output);
    const int row = EmbedRow(indices[item], input_dim);
    if (row < 0) {
      atomicMin(bad, static_cast<int>(item));
      top[i] = 0;
      continue;
    }
    const Dtype value = weight[static_cast<long long>(row) * num_output + j];
    top[i] = bias ? value + bias[j] : value;
  }
}

// Several items may pick the same row: their gradients add up atomically (the order of the
// additions, and so the last bits of the sum, may vary from run to run).
template <typename Dtype>
__global__ void EmbedWeightBackward(long long n, int num_output, int input_dim,
                                    const Dtype* indices, const Dtype* top_diff, Dtype* weight_diff,
                                    int* bad) {
  DOPPIO_KERNEL_LOOP(i, n) {
    const long long item = i / num_output;
    const int j = static_cast<int>(i % num_output);
    const int row = EmbedRow(indices[item], input_dim);
    if (row < 0) {
      atomicMin(bad, static_cast<int>(item));
      continue;
    }
    atomicAdd(weight_diff + static_cast<long long>(row) * num_output + j, top_diff[i]);
  }
}
}  // namespace

template <typename Dtype>
void EmbedLayer<Dtype>::Forward_gpu(const BlobVec& bottom, const BlobVec& top) {
  const int count = bottom[0]->count();
  if (count == 0) return;
  GpuContext& gpu = this->gpu();
  int* bad = ResetIndexFlag(gpu, &bad_index_);
  const long long n = static_cast<long long>(count) * num_output_;
  LaunchKernel("EmbedForward", gpu, n, EmbedForward<Dtype>, n, num_output_, input_dim_,
               bottom[0]->gpu_data(gpu), this->blobs_[0]->gpu_data(gpu),
               bias_term_ ? this->blobs_[1]->gpu_data(gpu) : nullptr, top[0]->mutable_gpu_data(gpu),
               bad);
  const int bad_item = ReadIndexFlag(bad_index_);
  if (bad_item != INT_MAX) Index(bottom[0]->cpu_data(), bad_item);  // throws its message
}

template <typename Dtype>
void EmbedLayer<Dtype>::Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                                     const BlobVec& bottom) {
  DOPPIO_ENSURE(!propagate_down[0])
      << this->Describe() << " cannot backpropagate to its bottom, which holds indices";
  const int count = bottom[0]->count();
  if (count == 0) return;
  GpuContext& gpu = this->gpu();
  const Dtype* top_diff = top[0]->gpu_diff(gpu);
  if (this->param_propagate_down(0)) {
    int* bad = ResetIndexFlag(gpu, &bad_index_);
    const long long n = static_cast<long long>(count) * num_output_;
    LaunchKernel("EmbedWeightBackward", gpu, n, EmbedWeightBackward<Dtype>, n, num_output_,
                 input_dim_, bottom[0]->gpu_data(gpu), top_diff,
                 this->blobs_[0]->mutable_gpu_diff(gpu), bad);
    const int bad_item = ReadIndexFlag(bad_index_);
    if (bad_item != INT_MAX) Index(bottom[0]->cpu_data(), bad_item);
  }
  if (bias_term_ && this->param_propagate_down(1)) {
    // bias_diff[j] += sum over items of top_diff[item][j]: a "channel" sum with one outer row
    // per item.
    ChannelSum(gpu, count, num_output_, 1, ProductTerm<Dtype>{top_diff, nullptr}, Dtype(1),
               this->blobs_[1]->mutable_gpu_diff(gpu));
  }
}

DOPPIO_INSTANTIATE_LAYER_GPU_FUNCS(EmbedLayer);

}  // namespace doppio
