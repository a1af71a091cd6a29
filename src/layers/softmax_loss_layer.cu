#include <cfloat>

#include "doppio/core/layer_kernels.cuh"
#include "doppio/layers/softmax_loss_layer.hpp"
#include "doppio/util/math_functions.hpp"
#include "doppio/util/nonfinite.hpp"

namespace doppio {

namespace {
// One thread per (outer, inner) position. An invalid label reports its index.
template <typename Dtype>
__global__ void SoftmaxLossForward(long long n, const Dtype* prob, const Dtype* labels,
                                   int channels, int inner, bool has_ignore_label, int ignore_label,
                                   Dtype* loss, Dtype* counts, int* bad) {
  DOPPIO_KERNEL_LOOP(p, n) {
    const int label = static_cast<int>(labels[p]);
    loss[p] = 0;
    counts[p] = 0;
    if (has_ignore_label && label == ignore_label) continue;
    if (label < 0 || label >= channels) {
      atomicMin(bad, static_cast<int>(p));
      continue;
    }
    const long long i =
        (p / inner) * channels * inner + static_cast<long long>(label) * inner + p % inner;
    loss[p] = -log(MaxKeepingNaN(prob[i], Dtype(FLT_MIN)));
    counts[p] = 1;
  }
}

// bottom_diff holds the probabilities; subtracts 1 at the label, clears ignored positions.
template <typename Dtype>
__global__ void SoftmaxLossBackward(long long n, const Dtype* labels, int channels, int inner,
                                    bool has_ignore_label, int ignore_label, Dtype* bottom_diff,
                                    Dtype* counts, int* bad) {
  DOPPIO_KERNEL_LOOP(p, n) {
    const int label = static_cast<int>(labels[p]);
    const long long base = (p / inner) * channels * inner + p % inner;
    counts[p] = 0;
    if (has_ignore_label && label == ignore_label) {
      for (int c = 0; c < channels; ++c) bottom_diff[base + static_cast<long long>(c) * inner] = 0;
      continue;
    }
    if (label < 0 || label >= channels) {
      atomicMin(bad, static_cast<int>(p));
      continue;
    }
    bottom_diff[base + static_cast<long long>(label) * inner] -= 1;
    counts[p] = 1;
  }
}
}  // namespace

template <typename Dtype>
void SoftmaxWithLossLayer<Dtype>::Forward_gpu(const BlobVec& bottom, const BlobVec& top) {
  this->ShareDevice(*softmax_layer_);
  softmax_layer_->Forward(softmax_bottom_, softmax_top_);
  GpuContext& gpu = this->gpu();
  const int positions = outer_num_ * inner_num_;
  loss_buffer_.Reshape(std::vector<int>{positions});
  count_buffer_.Reshape(std::vector<int>{positions});
  int* bad = ResetIndexFlag(gpu, &bad_label_);
  LaunchKernel("SoftmaxLossForward", gpu, positions, SoftmaxLossForward<Dtype>,
               static_cast<long long>(positions), prob_.gpu_data(gpu), bottom[1]->gpu_data(gpu),
               channels_, inner_num_, has_ignore_label_, ignore_label_,
               loss_buffer_.mutable_gpu_data(gpu), count_buffer_.mutable_gpu_data(gpu), bad);
  const int bad_index = ReadIndexFlag(bad_label_);
  if (bad_index != INT_MAX) {
    // Throws the CPU code's message for that label.
    CheckedLabel(bottom[1]->cpu_data(), bad_index / inner_num_, bad_index % inner_num_);
  }
  const Dtype loss = gpu_sum(gpu, positions, loss_buffer_.gpu_data(gpu));
  const int count = static_cast<int>(gpu_sum(gpu, positions, count_buffer_.gpu_data(gpu)) + 0.5);
  top[0]->mutable_cpu_data()[0] =
      loss / LossLayer<Dtype>::GetNormalizer(normalization_, outer_num_, inner_num_, count);
  if (top.size() == 2)
    gpu_copy(gpu, prob_.count(), prob_.gpu_data(gpu), top[1]->mutable_gpu_data(gpu));
}

template <typename Dtype>
void SoftmaxWithLossLayer<Dtype>::Backward_gpu(const BlobVec& top,
                                               const std::vector<bool>& propagate_down,
                                               const BlobVec& bottom) {
  this->RejectLabelGradient(propagate_down, 1);
  if (!propagate_down[0]) return;
  GpuContext& gpu = this->gpu();
  const int positions = outer_num_ * inner_num_;
  Dtype* bottom_diff = bottom[0]->mutable_gpu_diff(gpu);
  gpu_copy(gpu, prob_.count(), prob_.gpu_data(gpu), bottom_diff);
  count_buffer_.Reshape(std::vector<int>{positions});
  int* bad = ResetIndexFlag(gpu, &bad_label_);
  LaunchKernel("SoftmaxLossBackward", gpu, positions, SoftmaxLossBackward<Dtype>,
               static_cast<long long>(positions), bottom[1]->gpu_data(gpu), channels_, inner_num_,
               has_ignore_label_, ignore_label_, bottom_diff, count_buffer_.mutable_gpu_data(gpu),
               bad);
  const int bad_index = ReadIndexFlag(bad_label_);
  if (bad_index != INT_MAX) {
    CheckedLabel(bottom[1]->cpu_data(), bad_index / inner_num_, bad_index % inner_num_);
  }
  int count = positions;
  if (normalization_ == LossParameter::VALID) {
    count = static_cast<int>(gpu_sum(gpu, positions, count_buffer_.gpu_data(gpu)) + 0.5);
  }
  const Dtype scale = top[0]->cpu_diff()[0] / LossLayer<Dtype>::GetNormalizer(
                                                  normalization_, outer_num_, inner_num_, count);
  gpu_scal(gpu, prob_.count(), scale, bottom_diff);
}

DOPPIO_INSTANTIATE_LAYER_GPU_FUNCS(SoftmaxWithLossLayer);

}  // namespace doppio
