#include "doppio/layers/contrastive_loss_layer.hpp"

#include <algorithm>
#include <cmath>

#include "doppio/core/layer_registry.hpp"
#include "doppio/util/math_functions.hpp"

namespace doppio {

template <typename Dtype>
void ContrastiveLossLayer<Dtype>::Reshape(const BlobVec& bottom, const BlobVec& top) {
  LossLayer<Dtype>::Reshape(bottom, top);
  DOPPIO_ENSURE(bottom[0]->shape() == bottom[1]->shape())
      << this->Describe() << ": the two inputs must have the same shape, got "
      << bottom[0]->shape_string() << " and " << bottom[1]->shape_string();
  DOPPIO_ENSURE(bottom[2]->count() == bottom[0]->shape(0))
      << this->Describe() << ": expected one similarity label per pair (" << bottom[0]->shape(0)
      << "), got labels of shape " << bottom[2]->shape_string();
  diff_.ReshapeLike(*bottom[0]);
  dist_sq_.Reshape(std::vector<int>{bottom[0]->shape(0)});
}

template <typename Dtype>
void ContrastiveLossLayer<Dtype>::Forward_cpu(const BlobVec& bottom, const BlobVec& top) {
  const int num = bottom[0]->shape(0);
  const int dim = num == 0 ? 0 : bottom[0]->count() / num;
  cpu_sub(bottom[0]->count(), bottom[0]->cpu_data(), bottom[1]->cpu_data(),
          diff_.mutable_cpu_data());
  const Dtype* diff = diff_.cpu_data();
  const Dtype* y = bottom[2]->cpu_data();
  Dtype* dist_sq = dist_sq_.mutable_cpu_data();
  const Dtype margin = this->layer_param_.contrastive_loss_param().margin();
  const bool legacy = this->layer_param_.contrastive_loss_param().legacy_version();
  Dtype loss = 0;
  for (int n = 0; n < num; ++n) {
    dist_sq[n] = cpu_dot(dim, diff + n * dim, diff + n * dim);
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
void ContrastiveLossLayer<Dtype>::Backward_cpu(const BlobVec& top,
                                               const std::vector<bool>& propagate_down,
                                               const BlobVec& bottom) {
  this->RejectLabelGradient(propagate_down, 2);
  const int num = bottom[0]->shape(0);
  const int dim = num == 0 ? 0 : bottom[0]->count() / num;
  const Dtype* diff = diff_.cpu_data();
  const Dtype* y = bottom[2]->cpu_data();
  const Dtype* dist_sq = dist_sq_.cpu_data();
  const Dtype margin = this->layer_param_.contrastive_loss_param().margin();
  const bool legacy = this->layer_param_.contrastive_loss_param().legacy_version();
  for (int i = 0; i < 2; ++i) {
    if (!propagate_down[i]) continue;
    const Dtype sign = i == 0 ? 1 : -1;
    const Dtype alpha = sign * top[0]->cpu_diff()[0] / Dtype(std::max(num, 1));
    Dtype* out = bottom[i]->mutable_cpu_diff();
    for (int n = 0; n < num; ++n) {
      Dtype beta = 0;
      if (static_cast<int>(y[n]) != 0) {
        beta = alpha;
      } else if (legacy) {
        beta = margin - dist_sq[n] > 0 ? -alpha : Dtype(0);
      } else {
        // d/da (margin - d)^2 / 2 = -(margin - d) (a - b) / d; the small constant keeps
        // the division finite for coincident pairs, as in Caffe.
        const Dtype dist = std::sqrt(dist_sq[n]);
        const Dtype gap = margin - dist;
        beta = gap > 0 ? -alpha * gap / (dist + Dtype(1e-4)) : Dtype(0);
      }
      cpu_scale(dim, beta, diff + n * dim, out + n * dim);
    }
  }
}

DOPPIO_INSTANTIATE_CLASS(ContrastiveLossLayer);
REGISTER_LAYER_CLASS(ContrastiveLoss);

}  // namespace doppio
