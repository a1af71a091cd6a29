#include <algorithm>

#include "doppio/core/layer_kernels.cuh"
#include "doppio/layers/hinge_loss_layer.hpp"
#include "doppio/util/math_functions.hpp"
#include "doppio/util/nonfinite.hpp"

namespace doppio {

namespace {
template <typename Dtype>
__global__ void HingeForward(long long n, int dim, const Dtype* x, const Dtype* labels,
                             Dtype* margin, int* bad) {
  DOPPIO_KERNEL_LOOP(i, n) {
    const long long sample = i / dim;
    const int k = static_cast<int>(i % dim);
    const int label = static_cast<int>(labels[sample]);
    if (label < 0 || label >= dim) {
      atomicMin(bad, static_cast<int>(sample));
      margin[i] = 0;
      continue;
    }
    const Dtype t = k == label ? Dtype(1) : Dtype(-1);
    margin[i] = MaxKeepingNaN(Dtype(1) - t * x[i], Dtype(0));
  }
}

template <typename Dtype>
__global__ void HingeBackward(long long n, int dim, const Dtype* labels, const Dtype* margin,
                              Dtype scale, bool l2, Dtype* dx) {
  DOPPIO_KERNEL_LOOP(i, n) {
    const int label = static_cast<int>(labels[i / dim]);
    const int k = static_cast<int>(i % dim);
    const Dtype t = k == label ? Dtype(1) : Dtype(-1);
    const Dtype m = margin[i];
    const Dtype active = m > 0 ? Dtype(1) : Dtype(0);
    dx[i] = -t * scale * (l2 ? Dtype(2) * m : active);
  }
}
}  // namespace

template <typename Dtype>
void HingeLossLayer<Dtype>::Forward_gpu(const BlobVec& bottom, const BlobVec& top) {
  GpuContext& gpu = this->gpu();
  const int num = bottom[0]->shape(0);
  const int count = bottom[0]->count();
  const int dim = num == 0 ? 0 : count / num;
  Dtype* margin = margin_.mutable_gpu_data(gpu);
  int* bad = ResetIndexFlag(gpu, &bad_label_);
  if (dim > 0) {
    LaunchKernel("HingeForward", gpu, count, HingeForward<Dtype>, static_cast<long long>(count),
                 dim, bottom[0]->gpu_data(gpu), bottom[1]->gpu_data(gpu), margin, bad);
  }
  const int bad_sample = ReadIndexFlag(bad_label_);
  if (bad_sample != INT_MAX) {
    const int label = static_cast<int>(bottom[1]->cpu_data()[bad_sample]);
    DOPPIO_FAIL() << this->Describe() << ": label value " << label << " (sample " << bad_sample
                  << ") is outside the class range [0, " << dim << ")";
  }
  Dtype loss = 0;
  switch (this->layer_param_.hinge_loss_param().norm()) {
    case HingeLossParameter::L1:
      loss = gpu_asum(gpu, count, margin_.gpu_data(gpu));
      break;
    case HingeLossParameter::L2:
      loss = gpu_dot(gpu, count, margin_.gpu_data(gpu), margin_.gpu_data(gpu));
      break;
  }
  top[0]->mutable_cpu_data()[0] = loss / Dtype(std::max(num, 1));
}

template <typename Dtype>
void HingeLossLayer<Dtype>::Backward_gpu(const BlobVec& top,
                                         const std::vector<bool>& propagate_down,
                                         const BlobVec& bottom) {
  this->RejectLabelGradient(propagate_down, 1);
  if (!propagate_down[0]) return;
  GpuContext& gpu = this->gpu();
  const int num = bottom[0]->shape(0);
  const int count = bottom[0]->count();
  const int dim = num == 0 ? 0 : count / num;
  if (dim == 0) return;
  const Dtype scale = top[0]->cpu_diff()[0] / Dtype(std::max(num, 1));
  const bool l2 = this->layer_param_.hinge_loss_param().norm() == HingeLossParameter::L2;
  LaunchKernel("HingeBackward", gpu, count, HingeBackward<Dtype>, static_cast<long long>(count),
               dim, bottom[1]->gpu_data(gpu), margin_.gpu_data(gpu), scale, l2,
               bottom[0]->mutable_gpu_diff(gpu));
}

DOPPIO_INSTANTIATE_LAYER_GPU_FUNCS(HingeLossLayer);

}  // namespace doppio
