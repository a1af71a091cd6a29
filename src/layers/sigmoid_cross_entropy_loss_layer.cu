#include "doppio/core/layer_kernels.cuh"
#include "doppio/layers/sigmoid_cross_entropy_loss_layer.hpp"
#include "doppio/util/math_functions.hpp"
#include "doppio/util/nonfinite.hpp"

namespace doppio {

namespace {
template <typename Dtype>
__device__ bool Ignored(Dtype target, bool has_ignore_label, int ignore_label) {
  return has_ignore_label && static_cast<int>(target) == ignore_label;
}

template <typename Dtype>
__global__ void SigmoidCrossEntropyForward(long long n, const Dtype* x, const Dtype* t,
                                           bool has_ignore_label, int ignore_label, Dtype* loss,
                                           Dtype* counts) {
  DOPPIO_KERNEL_LOOP(i, n) {
    if (Ignored(t[i], has_ignore_label, ignore_label)) {
      loss[i] = 0;
      counts[i] = 0;
    } else {
      loss[i] = MaxKeepingNaN(x[i], Dtype(0)) - x[i] * t[i] + log1p(exp(-fabs(x[i])));
      counts[i] = 1;
    }
  }
}

template <typename Dtype>
__global__ void SigmoidCrossEntropyBackward(long long n, const Dtype* x, const Dtype* t,
                                            bool has_ignore_label, int ignore_label, Dtype* dx,
                                            Dtype* counts) {
  DOPPIO_KERNEL_LOOP(i, n) {
    if (Ignored(t[i], has_ignore_label, ignore_label)) {
      dx[i] = 0;
      counts[i] = 0;
    } else {
      const Dtype e = exp(-fabs(x[i]));
      const Dtype sigmoid = x[i] >= 0 ? Dtype(1) / (Dtype(1) + e) : e / (Dtype(1) + e);
      dx[i] = sigmoid - t[i];
      counts[i] = 1;
    }
  }
}
}  // namespace

template <typename Dtype>
void SigmoidCrossEntropyLossLayer<Dtype>::Forward_gpu(const BlobVec& bottom, const BlobVec& top) {
  GpuContext& gpu = this->gpu();
  const int count = bottom[0]->count();
  loss_buffer_.Reshape(std::vector<int>{count});
  count_buffer_.Reshape(std::vector<int>{count});
  LaunchKernel("SigmoidCrossEntropyForward", gpu, count, SigmoidCrossEntropyForward<Dtype>,
               static_cast<long long>(count), bottom[0]->gpu_data(gpu), bottom[1]->gpu_data(gpu),
               has_ignore_label_, ignore_label_, loss_buffer_.mutable_gpu_data(gpu),
               count_buffer_.mutable_gpu_data(gpu));
  const Dtype loss = gpu_sum(gpu, count, loss_buffer_.gpu_data(gpu));
  const int valid = static_cast<int>(gpu_sum(gpu, count, count_buffer_.gpu_data(gpu)) + 0.5);
  top[0]->mutable_cpu_data()[0] =
      loss / LossLayer<Dtype>::GetNormalizer(normalization_, outer_num_, inner_num_, valid);
}

template <typename Dtype>
void SigmoidCrossEntropyLossLayer<Dtype>::Backward_gpu(const BlobVec& top,
                                                       const std::vector<bool>& propagate_down,
                                                       const BlobVec& bottom) {
  this->RejectLabelGradient(propagate_down, 1);
  if (!propagate_down[0]) return;
  GpuContext& gpu = this->gpu();
  const int count = bottom[0]->count();
  count_buffer_.Reshape(std::vector<int>{count});
  Dtype* dx = bottom[0]->mutable_gpu_diff(gpu);
  LaunchKernel("SigmoidCrossEntropyBackward", gpu, count, SigmoidCrossEntropyBackward<Dtype>,
               static_cast<long long>(count), bottom[0]->gpu_data(gpu), bottom[1]->gpu_data(gpu),
               has_ignore_label_, ignore_label_, dx, count_buffer_.mutable_gpu_data(gpu));
  int valid = count;
  if (normalization_ == LossParameter::VALID) {
    valid = static_cast<int>(gpu_sum(gpu, count, count_buffer_.gpu_data(gpu)) + 0.5);
  }
  const Dtype scale = top[0]->cpu_diff()[0] / LossLayer<Dtype>::GetNormalizer(
                                                  normalization_, outer_num_, inner_num_, valid);
  gpu_scal(gpu, count, scale, dx);
}

DOPPIO_INSTANTIATE_LAYER_GPU_FUNCS(SigmoidCrossEntropyLossLayer);

}  // namespace doppio
