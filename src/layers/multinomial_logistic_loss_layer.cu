#include "doppio/core/layer_kernels.cuh"
#include "doppio/layers/multinomial_logistic_loss_layer.hpp"
#include "doppio/util/nonfinite.hpp"

namespace doppio {

namespace {
__device__ __forceinline__ bool ValidLabel(int label, int dim) { return label >= 0 && label < dim; }

template <typename Dtype>
__global__ void MultinomialLogisticLossForward(int num, int dim, const Dtype* prob,
                                               const Dtype* labels, Dtype threshold, Dtype* loss,
                                               int* bad) {
  DOPPIO_KERNEL_LOOP(n, num) {
    const int label = static_cast<int>(labels[n]);
    if (!ValidLabel(label, dim)) {
      atomicMin(bad, static_cast<int>(n));
      loss[n] = 0;
      continue;
    }
    const Dtype p = prob[n * dim + label];
    loss[n] = -log(MaxKeepingNaN(p, threshold));
  }
}

template <typename Dtype>
__global__ void MultinomialLogisticLossBackward(long long count, int dim, const Dtype* prob,
                                                const Dtype* labels, Dtype threshold, Dtype scale,
                                                Dtype* diff) {
  DOPPIO_KERNEL_LOOP(i, count) {
    const int label = static_cast<int>(labels[i / dim]);
    const Dtype p = MaxKeepingNaN(prob[i], threshold);
    diff[i] = i % dim == label ? scale / p : Dtype(0);
  }
}
}  // namespace

template <typename Dtype>
void MultinomialLogisticLossLayer<Dtype>::Forward_gpu(const BlobVec& bottom, const BlobVec& top) {
  if (num_ == 0) {
    top[0]->mutable_cpu_data()[0] = 0;
    return;
  }
  GpuContext& gpu = this->gpu();
  int* bad = ResetIndexFlag(gpu, &bad_label_);
  LaunchKernel("MultinomialLogisticLossForward", gpu, num_, MultinomialLogisticLossForward<Dtype>,
               num_, dim_, bottom[0]->gpu_data(gpu), bottom[1]->gpu_data(gpu), Dtype(kLogThreshold),
               item_loss_.mutable_gpu_data(gpu), bad);
  const int bad_item = ReadIndexFlag(bad_label_);
  if (bad_item != INT_MAX) CheckedLabel(bottom[1]->cpu_data(), bad_item);  // throws its message
  const Dtype loss = gpu_sum(gpu, num_, item_loss_.gpu_data(gpu));
  top[0]->mutable_cpu_data()[0] = loss / num_;
}

template <typename Dtype>
void MultinomialLogisticLossLayer<Dtype>::Backward_gpu(const BlobVec& top,
                                                       const std::vector<bool>& propagate_down,
                                                       const BlobVec& bottom) {
  this->RejectLabelGradient(propagate_down, 1);
  if (!propagate_down[0] || num_ == 0) return;
  GpuContext& gpu = this->gpu();
  const Dtype scale = -top[0]->cpu_diff()[0] / num_;
  const long long count = bottom[0]->count();
  // Labels were checked by Forward; a wrong one matches no position and writes only zeros.
  LaunchKernel("MultinomialLogisticLossBackward", gpu, count,
               MultinomialLogisticLossBackward<Dtype>, count, dim_, bottom[0]->gpu_data(gpu),
               bottom[1]->gpu_data(gpu), Dtype(kLogThreshold), scale,
               bottom[0]->mutable_gpu_diff(gpu));
}

DOPPIO_INSTANTIATE_LAYER_GPU_FUNCS(MultinomialLogisticLossLayer);

}  // namespace doppio
