#include "doppio/core/index_upload.cuh"
#include "doppio/core/layer_kernels.cuh"
#include "doppio/layers/batch_reindex_layer.hpp"

namespace doppio {

namespace {
template <typename Dtype>
__global__ void BatchReindexForward(long long n, int inner, const int* index, const Dtype* in,
                                    Dtype* out) {
  DOPPIO_KERNEL_LOOP(i, n) {
    const long long item = i / inner;
    out[i] = in[static_cast<long long>(index[item]) * inner + i % inner];
  }
}

// One thread per bottom element sums the gradients of its item's picks, in the order of the
// top, so the result does not depend on scheduling.
template <typename Dtype>
__global__ void BatchReindexBackward(long long n, int inner, const int* first, const int* picks,
                                     const Dtype* top_diff, Dtype* bottom_diff) {
  DOPPIO_KERNEL_LOOP(i, n) {
    const long long item = i / inner;
    const long long k = i % inner;
    Dtype sum = 0;
    for (int p = first[item]; p < first[item + 1]; ++p) {
      sum += top_diff[static_cast<long long>(picks[p]) * inner + k];
    }
    bottom_diff[i] = sum;
  }
}

}  // namespace

template <typename Dtype>
void BatchReindexLayer<Dtype>::Forward_gpu(const BlobVec& bottom, const BlobVec& top) {
  const std::vector<int> index = CheckedIndices(*bottom[1], bottom[0]->shape(0));
  GpuContext& gpu = this->gpu();
  const int inner = bottom[0]->count(1);
  const long long n = top[0]->count();
  const int* device_index = UploadIndices(gpu, index, &picks_);
  LaunchKernel("BatchReindexForward", gpu, n, BatchReindexForward<Dtype>, n, inner, device_index,
               bottom[0]->gpu_data(gpu), top[0]->mutable_gpu_data(gpu));
}

template <typename Dtype>
void BatchReindexLayer<Dtype>::Backward_gpu(const BlobVec& top,
                                            const std::vector<bool>& propagate_down,
                                            const BlobVec& bottom) {
  DOPPIO_ENSURE(!propagate_down[1])
      << this->Describe() << " cannot backpropagate to its indices (bottom 1)";
  if (!propagate_down[0]) return;
  const int num = bottom[0]->shape(0);
  const std::vector<int> index = CheckedIndices(*bottom[1], num);
  // A counting sort of the top positions by the item they pick.
  std::vector<int> first(num + 1, 0);
  for (int item : index) ++first[item + 1];
  for (int item = 0; item < num; ++item) first[item + 1] += first[item];
  std::vector<int> picks(index.size());
  std::vector<int> next(first.begin(), first.end() - 1);
  for (std::size_t i = 0; i < index.size(); ++i) picks[next[index[i]]++] = static_cast<int>(i);
  GpuContext& gpu = this->gpu();
  const int* device_first = UploadIndices(gpu, first, &first_);
  const int* device_picks = UploadIndices(gpu, picks, &picks_);
  const long long n = bottom[0]->count();
  LaunchKernel("BatchReindexBackward", gpu, n, BatchReindexBackward<Dtype>, n, bottom[0]->count(1),
               device_first, device_picks, top[0]->gpu_diff(gpu), bottom[0]->mutable_gpu_diff(gpu));
}

DOPPIO_INSTANTIATE_LAYER_GPU_FUNCS(BatchReindexLayer);

}  // namespace doppio
