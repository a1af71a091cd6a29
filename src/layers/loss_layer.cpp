#include "doppio/layers/loss_layer.hpp"

#include <algorithm>

namespace doppio {

template <typename Dtype>
void LossLayer<Dtype>::Reshape(const BlobVec& bottom, const BlobVec& top) {
  DOPPIO_ENSURE(bottom[0]->num_axes() >= 1 && bottom[1]->num_axes() >= 1)
      << this->Describe() << ": predictions and labels need at least one axis, got "
      << bottom[0]->shape_string() << " and " << bottom[1]->shape_string();
  DOPPIO_ENSURE(bottom[0]->shape(0) == bottom[1]->shape(0))
      << this->Describe() << ": predictions " << bottom[0]->shape_string() << " and labels "
      << bottom[1]->shape_string() << " must have the same first dimension";
  top[0]->Reshape(std::vector<int>{});
}

template <typename Dtype>
LossParameter::NormalizationMode LossLayer<Dtype>::ResolveNormalization(
    const LossParameter& param, LossParameter::NormalizationMode fallback) {
  if (param.has_normalization()) return param.normalization();
  if (param.has_normalize())
    return param.normalize() ? LossParameter::VALID : LossParameter::BATCH_SIZE;
  return fallback;
}

template <typename Dtype>
Dtype LossLayer<Dtype>::GetNormalizer(LossParameter::NormalizationMode mode, int outer_num,
                                      int inner_num, int valid_count) {
  Dtype normalizer = 1;
  switch (mode) {
    case LossParameter::FULL:
      normalizer = Dtype(outer_num) * Dtype(inner_num);
      break;
    case LossParameter::VALID:
      normalizer = valid_count < 0 ? Dtype(outer_num) * Dtype(inner_num) : Dtype(valid_count);
      break;
    case LossParameter::BATCH_SIZE:
      normalizer = Dtype(outer_num);
      break;
    case LossParameter::NONE:
      normalizer = 1;
      break;
  }
  return std::max(Dtype(1), normalizer);
}

template <typename Dtype>
void LossLayer<Dtype>::RejectLabelGradient(const std::vector<bool>& propagate_down,
                                           int bottom_index) const {
  DOPPIO_ENSURE(bottom_index >= static_cast<int>(propagate_down.size()) ||
                !propagate_down[bottom_index])
      << this->Describe() << " cannot backpropagate to its label input (bottom " << bottom_index
      << ")";
}

DOPPIO_INSTANTIATE_CLASS(LossLayer);

}  // namespace doppio
