#include "doppio/layers/sigmoid_cross_entropy_loss_layer.hpp"

#include <algorithm>
#include <cmath>

#include "doppio/core/layer_registry.hpp"
#include "doppio/util/math_functions.hpp"

namespace doppio {

template <typename Dtype>
void SigmoidCrossEntropyLossLayer<Dtype>::LayerSetUp(const BlobVec& bottom, const BlobVec& top) {
  const LossParameter& loss_param = this->layer_param_.loss_param();
  has_ignore_label_ = loss_param.has_ignore_label();
  ignore_label_ = loss_param.ignore_label();
  normalization_ = LossLayer<Dtype>::ResolveNormalization(loss_param, LossParameter::BATCH_SIZE);
}

template <typename Dtype>
void SigmoidCrossEntropyLossLayer<Dtype>::Reshape(const BlobVec& bottom, const BlobVec& top) {
  LossLayer<Dtype>::Reshape(bottom, top);
  DOPPIO_ENSURE(bottom[0]->count() == bottom[1]->count())
      << this->Describe() << ": predictions " << bottom[0]->shape_string() << " and targets "
      << bottom[1]->shape_string() << " must have the same count";
  outer_num_ = bottom[0]->shape(0);
  inner_num_ = bottom[0]->count(1);
}

template <typename Dtype>
void SigmoidCrossEntropyLossLayer<Dtype>::Forward_cpu(const BlobVec& bottom, const BlobVec& top) {
  const int count = bottom[0]->count();
  const Dtype* x = bottom[0]->cpu_data();
  const Dtype* t = bottom[1]->cpu_data();
  Dtype loss = 0;
  int valid = 0;
  for (int i = 0; i < count; ++i) {
    if (IsIgnored(t[i])) continue;
    // -[t log s(x) + (1 - t) log(1 - s(x))] = max(x, 0) - x t + log(1 + exp(-|x|)).
    loss += std::max(x[i], Dtype(0)) - x[i] * t[i] + std::log1p(std::exp(-std::fabs(x[i])));
    ++valid;
  }
  top[0]->mutable_cpu_data()[0] =
      loss / LossLayer<Dtype>::GetNormalizer(normalization_, outer_num_, inner_num_, valid);
}

template <typename Dtype>
void SigmoidCrossEntropyLossLayer<Dtype>::Backward_cpu(const BlobVec& top,
                                                       const std::vector<bool>& propagate_down,
                                                       const BlobVec& bottom) {
  this->RejectLabelGradient(propagate_down, 1);
  if (!propagate_down[0]) return;
  const int count = bottom[0]->count();
  const Dtype* x = bottom[0]->cpu_data();
  const Dtype* t = bottom[1]->cpu_data();
  Dtype* dx = bottom[0]->mutable_cpu_diff();
  int valid = 0;
  for (int i = 0; i < count; ++i) {
    if (IsIgnored(t[i])) {
      dx[i] = 0;
      continue;
    }
    // sigmoid(x) - t, with sigmoid written so that exp() never overflows.
    const Dtype e = std::exp(-std::fabs(x[i]));
    const Dtype sigmoid = x[i] >= 0 ? Dtype(1) / (Dtype(1) + e) : e / (Dtype(1) + e);
    dx[i] = sigmoid - t[i];
    ++valid;
  }
  const Dtype scale = top[0]->cpu_diff()[0] / LossLayer<Dtype>::GetNormalizer(
                                                  normalization_, outer_num_, inner_num_, valid);
  cpu_scal(count, scale, dx);
}

DOPPIO_INSTANTIATE_CLASS(SigmoidCrossEntropyLossLayer);
REGISTER_LAYER_CLASS(SigmoidCrossEntropyLoss);

}  // namespace doppio
