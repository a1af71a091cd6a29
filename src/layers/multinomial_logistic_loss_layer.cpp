#include "doppio/layers/multinomial_logistic_loss_layer.hpp"

#include <algorithm>
#include <cmath>

#include "doppio/core/layer_registry.hpp"
#include "doppio/util/math_functions.hpp"
#include "doppio/util/nonfinite.hpp"

namespace doppio {

template <typename Dtype>
void MultinomialLogisticLossLayer<Dtype>::LayerSetUp(const BlobVec& bottom, const BlobVec& top) {
  const LossParameter& param = this->layer_param_.loss_param();
  DOPPIO_ENSURE(!param.has_ignore_label())
      << this->Describe() << ": loss_param.ignore_label is not supported by this layer type "
      << "(Caffe's has none either); use SoftmaxWithLoss on the scores to ignore a label";
  DOPPIO_ENSURE(LossLayer<Dtype>::ResolveNormalization(param, LossParameter::BATCH_SIZE) ==
                LossParameter::BATCH_SIZE)
      << this->Describe() << ": loss_param.normalization other than BATCH_SIZE is not supported "
      << "by this layer type, which divides by the batch size as Caffe's does";
}

template <typename Dtype>
void MultinomialLogisticLossLayer<Dtype>::Reshape(const BlobVec& bottom, const BlobVec& top) {
  LossLayer<Dtype>::Reshape(bottom, top);
  num_ = bottom[0]->shape(0);
  dim_ = num_ > 0 ? bottom[0]->count() / num_ : 0;
  DOPPIO_ENSURE(bottom[1]->count() == num_)
      << this->Describe() << ": needs one label per item: the labels (bottom 1) have shape "
      << bottom[1]->shape_string() << " for " << num_ << " items";
  item_loss_.Reshape(std::vector<int>{num_});
}

template <typename Dtype>
int MultinomialLogisticLossLayer<Dtype>::CheckedLabel(const Dtype* labels, int n) const {
  const int label = static_cast<int>(labels[n]);
  DOPPIO_ENSURE(label >= 0 && label < dim_)
      << this->Describe() << ": label value " << label << " (at label index " << n
      << ") is outside the class range [0, " << dim_ << ")";
  return label;
}

template <typename Dtype>
void MultinomialLogisticLossLayer<Dtype>::Forward_cpu(const BlobVec& bottom, const BlobVec& top) {
  const Dtype* prob = bottom[0]->cpu_data();
  const Dtype* labels = bottom[1]->cpu_data();
  Dtype loss = 0;
  for (int n = 0; n < num_; ++n) {
    const int label = CheckedLabel(labels, n);
    loss -= std::log(MaxKeepingNaN(prob[n * dim_ + label], Dtype(kLogThreshold)));
  }
  top[0]->mutable_cpu_data()[0] = num_ > 0 ? loss / num_ : Dtype(0);
}

template <typename Dtype>
void MultinomialLogisticLossLayer<Dtype>::Backward_cpu(const BlobVec& top,
                                                       const std::vector<bool>& propagate_down,
                                                       const BlobVec& bottom) {
  this->RejectLabelGradient(propagate_down, 1);
  if (!propagate_down[0] || num_ == 0) return;
  const Dtype* prob = bottom[0]->cpu_data();
  const Dtype* labels = bottom[1]->cpu_data();
  Dtype* diff = bottom[0]->mutable_cpu_diff();
  cpu_set(bottom[0]->count(), Dtype(0), diff);
  const Dtype scale = -top[0]->cpu_diff()[0] / num_;
  for (int n = 0; n < num_; ++n) {
    const int i = n * dim_ + CheckedLabel(labels, n);
    diff[i] = scale / MaxKeepingNaN(prob[i], Dtype(kLogThreshold));
  }
}

DOPPIO_INSTANTIATE_CLASS(MultinomialLogisticLossLayer);
REGISTER_LAYER_CLASS(MultinomialLogisticLoss);

}  // namespace doppio
