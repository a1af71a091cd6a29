#include "doppio/layers/softmax_loss_layer.hpp"

#include <algorithm>
#include <cfloat>
#include <cmath>

#include "doppio/core/layer_registry.hpp"
#include "doppio/util/math_functions.hpp"
#include "doppio/util/nonfinite.hpp"

namespace doppio {

template <typename Dtype>
void SoftmaxWithLossLayer<Dtype>::LayerSetUp(const BlobVec& bottom, const BlobVec& top) {
  LayerParameter softmax_param(this->layer_param_);
  softmax_param.set_type("Softmax");
  softmax_param.clear_loss_weight();
  softmax_param.clear_bottom();
  softmax_param.clear_top();
  // On the GPU the layer's Forward_gpu runs, which every Softmax engine inherits from
  // SoftmaxLayer: the CPU's choice serves both.
  softmax_layer_ = LayerRegistry<Dtype>::CreateLayer(softmax_param, Mode::CPU);
  softmax_bottom_ = {bottom[0]};
  softmax_top_ = {&prob_};
  softmax_layer_->SetUp(softmax_bottom_, softmax_top_);

  const LossParameter& loss_param = this->layer_param_.loss_param();
  has_ignore_label_ = loss_param.has_ignore_label();
  ignore_label_ = loss_param.ignore_label();
  normalization_ = LossLayer<Dtype>::ResolveNormalization(loss_param);
}

template <typename Dtype>
void SoftmaxWithLossLayer<Dtype>::Reshape(const BlobVec& bottom, const BlobVec& top) {
  LossLayer<Dtype>::Reshape(bottom, top);
  softmax_bottom_[0] = bottom[0];
  softmax_layer_->Reshape(softmax_bottom_, softmax_top_);
  const int axes = bottom[0]->num_axes();
  const int axis = this->layer_param_.softmax_param().axis();
  softmax_axis_ = axis < 0 ? axis + axes : axis;
  outer_num_ = bottom[0]->count(0, softmax_axis_);
  inner_num_ = bottom[0]->count(softmax_axis_ + 1);
  channels_ = bottom[0]->shape(softmax_axis_);
  DOPPIO_ENSURE(outer_num_ * inner_num_ == bottom[1]->count())
      << this->Describe() << ": the number of labels (" << bottom[1]->count() << ", shape "
      << bottom[1]->shape_string() << ") must equal the number of predictions ("
      << outer_num_ * inner_num_ << ": the prediction shape " << bottom[0]->shape_string()
      << " without the softmax axis " << softmax_axis_ << ")";
  if (top.size() >= 2) top[1]->ReshapeLike(*bottom[0]);
}

template <typename Dtype>
int SoftmaxWithLossLayer<Dtype>::CheckedLabel(const Dtype* labels, int i, int j) const {
  const int label = static_cast<int>(labels[i * inner_num_ + j]);
  if (has_ignore_label_ && label == ignore_label_) return -1;
  DOPPIO_ENSURE(label >= 0 && label < channels_)
      << this->Describe() << ": label value " << label << " (at label index " << i * inner_num_ + j
      << ") is outside the class range [0, " << channels_ << ")";
  return label;
}

template <typename Dtype>
void SoftmaxWithLossLayer<Dtype>::Forward_cpu(const BlobVec& bottom, const BlobVec& top) {
  softmax_layer_->Forward(softmax_bottom_, softmax_top_);
  const Dtype* prob = prob_.cpu_data();
  const Dtype* labels = bottom[1]->cpu_data();
  const int dim = channels_ * inner_num_;
  Dtype loss = 0;
  int count = 0;
  for (int i = 0; i < outer_num_; ++i) {
    for (int j = 0; j < inner_num_; ++j) {
      const int label = CheckedLabel(labels, i, j);
      if (label < 0) continue;
      loss -= std::log(MaxKeepingNaN(prob[i * dim + label * inner_num_ + j], Dtype(FLT_MIN)));
      ++count;
    }
  }
  top[0]->mutable_cpu_data()[0] =
      loss / LossLayer<Dtype>::GetNormalizer(normalization_, outer_num_, inner_num_, count);
  // A copy rather than shared memory: a consumer of the probabilities working in place must
  // not change the values Backward reads.
  if (top.size() == 2) cpu_copy(prob_.count(), prob, top[1]->mutable_cpu_data());
}

template <typename Dtype>
void SoftmaxWithLossLayer<Dtype>::Backward_cpu(const BlobVec& top,
                                               const std::vector<bool>& propagate_down,
                                               const BlobVec& bottom) {
  this->RejectLabelGradient(propagate_down, 1);
  if (!propagate_down[0]) return;
  Dtype* bottom_diff = bottom[0]->mutable_cpu_diff();
  const Dtype* labels = bottom[1]->cpu_data();
  cpu_copy(prob_.count(), prob_.cpu_data(), bottom_diff);
  const int dim = channels_ * inner_num_;
  int count = 0;
  for (int i = 0; i < outer_num_; ++i) {
    for (int j = 0; j < inner_num_; ++j) {
      const int label = CheckedLabel(labels, i, j);
      if (label < 0) {
        for (int c = 0; c < channels_; ++c) bottom_diff[i * dim + c * inner_num_ + j] = 0;
      } else {
        bottom_diff[i * dim + label * inner_num_ + j] -= 1;
        ++count;
      }
    }
  }
  const Dtype scale = top[0]->cpu_diff()[0] / LossLayer<Dtype>::GetNormalizer(
                                                  normalization_, outer_num_, inner_num_, count);
  cpu_scal(prob_.count(), scale, bottom_diff);
}

DOPPIO_INSTANTIATE_CLASS(SoftmaxWithLossLayer);
REGISTER_LAYER_CLASS(SoftmaxWithLoss);

}  // namespace doppio
