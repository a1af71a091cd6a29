#include <algorithm>
#include <cmath>

#include "doppio/core/layer_kernels.cuh"
#include "doppio/layers/contrastive_loss_layer.hpp"
#include "doppio/util/math_functions.hpp"

namespace doppio {

namespace {
template <typename Dtype>
__global__ void ContrastiveBackward(long long n, int dim, const Dtype* diff, const Dtype* y,
                                    const Dtype* dist_sq, Dtype margin, bool legacy, Dtype alpha,
                                    Dtype* out) {
  DOPPIO_KERNEL_LOOP(i, n) {
    const long long pair = i / dim;
    Dtype beta = 0;
    if (static_cast<int>(y[pair]) != 0) {
      beta = alpha;
    } else if (legacy) {
      beta = margin - dist_sq[pair] > 0 ? -alpha : Dtype(0);
    } else {
      const Dtype dist = sqrt(dist_sq[pair]);
      const Dtype gap = margin - dist;
      beta = gap > 0 ? -alpha * gap / (dist + Dtype(1e-4)) : Dtype(0);
    }
    out[i] = beta * diff[i];
  }
}
}  // namespace

template <typename Dtype>
void ContrastiveLossLayer<Dtype>::Forward_gpu(const BlobVec& bottom, const BlobVec& top) {
  GpuContext& gpu = this->gpu();
  const int num = bottom[0]->shape(0);
  const int dim = num == 0 ? 0 : bottom[0]->count() / num;
  gpu_sub(gpu, bottom[0]->count(), bottom[0]->gpu_data(gpu), bottom[1]->gpu_data(gpu),
          diff_.mutable_gpu_data(gpu));
  // dist_sq[n] = sum over the pair's values of diff^2: a "channel" sum with one outer row.
  const Dtype* diff = diff_.gpu_data(gpu);
  if (num > 0) {
    ChannelSum(gpu, 1, num, dim, ProductTerm<Dtype>{diff, diff}, Dtype(0),
               dist_sq_.mutable_gpu_data(gpu));
  }
  // The per-pair loss is cheap: finish on the host, as the CPU code does.
  const Dtype* dist_sq = dist_sq_.cpu_data();
  const Dtype* y = bottom[2]->cpu_data();
  const Dtype margin = this->layer_param_.contrastive_loss_param().margin();
  const bool legacy = this->layer_param_.contrastive_loss_param().legacy_version();
  Dtype loss = 0;
  for (int n = 0; n < num; ++n) {
    if (static_cast<int>(y[n]) != 0) {
      loss += dist_sq[n];
    } else if (legacy) {
      loss += std::max(margin - dist_sq[n], Dtype(0));
    } else {
      const Dtype gap = std::max(margin - std::sqrt(dist_sq[n]), Dtype(0));
      loss += gap * gap;
    }
  }
  top[0]->mutable_cpu_data()[0] = loss / Dtype(std::max(num, 1)) / Dtype(2);
}

template <typename Dtype>
void ContrastiveLossLayer<Dtype>::Backward_gpu(const BlobVec& top,
                                               const std::vector<bool>& propagate_down,
                                               const BlobVec& bottom) {
  this->RejectLabelGradient(propagate_down, 2);
  GpuContext& gpu = this->gpu();
  const int num = bottom[0]->shape(0);
  const int count = bottom[0]->count();
  const int dim = num == 0 ? 0 : count / num;
  if (dim == 0) return;
  const Dtype margin = this->layer_param_.contrastive_loss_param().margin();
  const bool legacy = this->layer_param_.contrastive_loss_param().legacy_version();
  for (int i = 0; i < 2; ++i) {
    if (!propagate_down[i]) continue;
    const Dtype sign = i == 0 ? 1 : -1;
    const Dtype alpha = sign * top[0]->cpu_diff()[0] / Dtype(std::max(num, 1));
    LaunchKernel("ContrastiveBackward", gpu, count, ContrastiveBackward<Dtype>,
                 static_cast<long long>(count), dim, diff_.gpu_data(gpu), bottom[2]->gpu_data(gpu),
                 dist_sq_.gpu_data(gpu), margin, legacy, alpha, bottom[i]->mutable_gpu_diff(gpu));
  }
}

DOPPIO_INSTANTIATE_LAYER_GPU_FUNCS(ContrastiveLossLayer);

}  // namespace doppio
