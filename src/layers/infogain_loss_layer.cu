#include <cfloat>

#include "doppio/core/layer_kernels.cuh"
#include "doppio/layers/infogain_loss_layer.hpp"
#include "doppio/util/math_functions.hpp"
#include "doppio/util/nonfinite.hpp"

namespace doppio {

namespace {
template <typename Dtype>
__global__ void InfogainForward(long long n, const Dtype* prob, const Dtype* labels, const Dtype* H,
                                int classes, int inner, bool has_ignore_label, int ignore_label,
                                Dtype* loss, Dtype* counts, int* bad) {
  DOPPIO_KERNEL_LOOP(p, n) {
    const int label = static_cast<int>(labels[p]);
    loss[p] = 0;
    counts[p] = 0;
    if (has_ignore_label && label == ignore_label) continue;
    if (label < 0 || label >= classes) {
      atomicMin(bad, static_cast<int>(p));
      continue;
    }
    const long long base = (p / inner) * classes * inner + p % inner;
    const Dtype* h = H + static_cast<long long>(label) * classes;
    Dtype sum = 0;
    for (int k = 0; k < classes; ++k) {
      sum -=
          h[k] * log(MaxKeepingNaN(prob[base + static_cast<long long>(k) * inner], Dtype(FLT_MIN)));
    }
    loss[p] = sum;
    counts[p] = 1;
  }
}

template <typename Dtype>
__global__ void InfogainRowSums(int classes, const Dtype* H, Dtype* row_sums) {
  DOPPIO_KERNEL_LOOP(l, classes) {
    Dtype sum = 0;
    for (int k = 0; k < classes; ++k) sum += H[l * classes + k];
    row_sums[l] = sum;
  }
}

template <typename Dtype>
__global__ void InfogainBackward(long long n, const Dtype* prob, const Dtype* labels,
                                 const Dtype* H, const Dtype* row_sums, int classes, int inner,
                                 bool has_ignore_label, int ignore_label, Dtype* dx, Dtype* counts,
                                 int* bad) {
  DOPPIO_KERNEL_LOOP(p, n) {
    const int label = static_cast<int>(labels[p]);
    const long long base = (p / inner) * classes * inner + p % inner;
    counts[p] = 0;
    if (has_ignore_label && label == ignore_label) {
      for (int k = 0; k < classes; ++k) dx[base + static_cast<long long>(k) * inner] = 0;
      continue;
    }
    if (label < 0 || label >= classes) {
      atomicMin(bad, static_cast<int>(p));
      continue;
    }
    const Dtype* h = H + static_cast<long long>(label) * classes;
    for (int k = 0; k < classes; ++k) {
      const long long i = base + static_cast<long long>(k) * inner;
      dx[i] = prob[i] * row_sums[label] - h[k];
    }
    counts[p] = 1;
  }
}
}  // namespace

template <typename Dtype>
void InfogainLossLayer<Dtype>::Forward_gpu(const BlobVec& bottom, const BlobVec& top) {
  this->ShareDevice(*softmax_layer_);
  softmax_layer_->Forward(softmax_bottom_, softmax_top_);
  GpuContext& gpu = this->gpu();
  const int positions = outer_num_ * inner_num_;
  loss_buffer_.Reshape(std::vector<int>{positions});
  count_buffer_.Reshape(std::vector<int>{positions});
  int* bad = ResetIndexFlag(gpu, &bad_label_);
  LaunchKernel("InfogainForward", gpu, positions, InfogainForward<Dtype>,
               static_cast<long long>(positions), prob_.gpu_data(gpu), bottom[1]->gpu_data(gpu),
               Infogain(bottom).gpu_data(gpu), num_classes_, inner_num_, has_ignore_label_,
               ignore_label_, loss_buffer_.mutable_gpu_data(gpu),
               count_buffer_.mutable_gpu_data(gpu), bad);
  const int bad_index = ReadIndexFlag(bad_label_);
  if (bad_index != INT_MAX) CheckedLabel(bottom[1]->cpu_data(), bad_index);
  const Dtype loss = gpu_sum(gpu, positions, loss_buffer_.gpu_data(gpu));
  const int count = static_cast<int>(gpu_sum(gpu, positions, count_buffer_.gpu_data(gpu)) + 0.5);
  top[0]->mutable_cpu_data()[0] =
      loss / LossLayer<Dtype>::GetNormalizer(normalization_, outer_num_, inner_num_, count);
  if (top.size() == 2) {
    gpu_copy(gpu, prob_.count(), prob_.gpu_data(gpu), top[1]->mutable_gpu_data(gpu));
  }
}

template <typename Dtype>
void InfogainLossLayer<Dtype>::Backward_gpu(const BlobVec& top,
                                            const std::vector<bool>& propagate_down,
                                            const BlobVec& bottom) {
  this->RejectLabelGradient(propagate_down, 1);
  DOPPIO_ENSURE(propagate_down.size() < 3 || !propagate_down[2])
      << this->Describe() << " cannot backpropagate to the infogain matrix (bottom 2)";
  if (!propagate_down[0]) return;
  GpuContext& gpu = this->gpu();
  const Dtype* H = Infogain(bottom).gpu_data(gpu);
  LaunchKernel("InfogainRowSums", gpu, num_classes_, InfogainRowSums<Dtype>, num_classes_, H,
               row_sums_.mutable_gpu_data(gpu));
  const int positions = outer_num_ * inner_num_;
  count_buffer_.Reshape(std::vector<int>{positions});
  Dtype* dx = bottom[0]->mutable_gpu_diff(gpu);
  int* bad = ResetIndexFlag(gpu, &bad_label_);
  LaunchKernel("InfogainBackward", gpu, positions, InfogainBackward<Dtype>,
               static_cast<long long>(positions), prob_.gpu_data(gpu), bottom[1]->gpu_data(gpu), H,
               row_sums_.gpu_data(gpu), num_classes_, inner_num_, has_ignore_label_, ignore_label_,
               dx, count_buffer_.mutable_gpu_data(gpu), bad);
  const int bad_index = ReadIndexFlag(bad_label_);
  if (bad_index != INT_MAX) CheckedLabel(bottom[1]->cpu_data(), bad_index);
  int count = positions;
  if (normalization_ == LossParameter::VALID) {
    count = static_cast<int>(gpu_sum(gpu, positions, count_buffer_.gpu_data(gpu)) + 0.5);
  }
  const Dtype scale = top[0]->cpu_diff()[0] / LossLayer<Dtype>::GetNormalizer(
                                                  normalization_, outer_num_, inner_num_, count);
  gpu_scal(gpu, bottom[0]->count(), scale, dx);
}

DOPPIO_INSTANTIATE_LAYER_GPU_FUNCS(InfogainLossLayer);

}  // namespace doppio
