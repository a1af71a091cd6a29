#include "doppio/layers/infogain_loss_layer.hpp"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <fstream>

#include "doppio/core/layer_registry.hpp"
#include "doppio/util/math_functions.hpp"
#include "doppio/util/nonfinite.hpp"

namespace doppio {

template <typename Dtype>
void InfogainLossLayer<Dtype>::LayerSetUp(const BlobVec& bottom, const BlobVec& top) {
  const int axes = bottom[0]->num_axes();
  const int axis = this->layer_param_.infogain_loss_param().axis();
  DOPPIO_ENSURE(axis >= -axes && axis < axes)
      << this->Describe() << ": infogain_loss_param.axis " << axis << " is out of range for bottom "
      << bottom[0]->shape_string();
  LayerParameter softmax_param(this->layer_param_);
  softmax_param.set_type("Softmax");
  softmax_param.clear_loss_weight();
  softmax_param.clear_bottom();
  softmax_param.clear_top();
  softmax_param.mutable_softmax_param()->set_axis(axis);
  softmax_layer_ = std::make_unique<SoftmaxLayer<Dtype>>(softmax_param);
  softmax_bottom_ = {bottom[0]};
  softmax_top_ = {&prob_};
  softmax_layer_->SetUp(softmax_bottom_, softmax_top_);

  const LossParameter& loss_param = this->layer_param_.loss_param();
  has_ignore_label_ = loss_param.has_ignore_label();
  ignore_label_ = loss_param.ignore_label();
  normalization_ = LossLayer<Dtype>::ResolveNormalization(loss_param);

  if (bottom.size() < 3) {
    const std::string& source = this->layer_param_.infogain_loss_param().source();
    DOPPIO_ENSURE(!source.empty())
        << this->Describe()
        << ": give the infogain matrix as infogain_loss_param.source or as a third bottom";
    std::ifstream in(source, std::ios::binary);
    DOPPIO_ENSURE(in.good()) << this->Describe() << ": cannot open infogain_loss_param.source '"
                             << source << "'";
    BlobProto proto;
    DOPPIO_ENSURE(proto.ParseFromIstream(&in))
        << this->Describe() << ": infogain_loss_param.source '" << source
        << "' is not a binary BlobProto";
    infogain_.FromProto(proto);
  }
}

template <typename Dtype>
void InfogainLossLayer<Dtype>::Reshape(const BlobVec& bottom, const BlobVec& top) {
  LossLayer<Dtype>::Reshape(bottom, top);
  softmax_bottom_[0] = bottom[0];
  softmax_layer_->Reshape(softmax_bottom_, softmax_top_);
  const int axes = bottom[0]->num_axes();
  const int axis = this->layer_param_.infogain_loss_param().axis();
  axis_ = axis < 0 ? axis + axes : axis;
  outer_num_ = bottom[0]->count(0, axis_);
  inner_num_ = bottom[0]->count(axis_ + 1);
  num_classes_ = bottom[0]->shape(axis_);
  DOPPIO_ENSURE(outer_num_ * inner_num_ == bottom[1]->count())
      << this->Describe() << ": the number of labels (" << bottom[1]->count() << ", shape "
      << bottom[1]->shape_string() << ") must equal the number of predictions ("
      << outer_num_ * inner_num_ << ": the prediction shape " << bottom[0]->shape_string()
      << " without the axis " << axis_ << ")";
  const Blob<Dtype>& infogain = Infogain(bottom);
  DOPPIO_ENSURE(infogain.count() == num_classes_ * num_classes_)
      << this->Describe() << ": the infogain matrix "
      << (bottom.size() >= 3 ? "(bottom 2)"
                             : "from '" + this->layer_param_.infogain_loss_param().source() + "'")
      << " has shape " << infogain.shape_string() << "; expected " << num_classes_ << " x "
      << num_classes_ << " values";
  row_sums_.Reshape(std::vector<int>{num_classes_});
  if (top.size() >= 2) top[1]->ReshapeLike(*bottom[0]);
}

template <typename Dtype>
int InfogainLossLayer<Dtype>::CheckedLabel(const Dtype* labels, int index) const {
  const int label = static_cast<int>(labels[index]);
  if (has_ignore_label_ && label == ignore_label_) return -1;
  DOPPIO_ENSURE(label >= 0 && label < num_classes_)
      << this->Describe() << ": label value " << label << " (at label index " << index
      << ") is outside the class range [0, " << num_classes_ << ")";
  return label;
}

template <typename Dtype>
void InfogainLossLayer<Dtype>::Forward_cpu(const BlobVec& bottom, const BlobVec& top) {
  softmax_layer_->Forward(softmax_bottom_, softmax_top_);
  const Dtype* prob = prob_.cpu_data();
  const Dtype* labels = bottom[1]->cpu_data();
  const Dtype* H = Infogain(bottom).cpu_data();
  const int dim = num_classes_ * inner_num_;
  Dtype loss = 0;
  int count = 0;
  for (int i = 0; i < outer_num_; ++i) {
    for (int j = 0; j < inner_num_; ++j) {
      const int label = CheckedLabel(labels, i * inner_num_ + j);
      if (label < 0) continue;
      const Dtype* h = H + label * num_classes_;
      for (int k = 0; k < num_classes_; ++k) {
        loss -= h[k] * std::log(MaxKeepingNaN(prob[i * dim + k * inner_num_ + j], Dtype(FLT_MIN)));
      }
      ++count;
    }
  }
  top[0]->mutable_cpu_data()[0] =
      loss / LossLayer<Dtype>::GetNormalizer(normalization_, outer_num_, inner_num_, count);
  if (top.size() == 2) cpu_copy(prob_.count(), prob, top[1]->mutable_cpu_data());
}

template <typename Dtype>
void InfogainLossLayer<Dtype>::Backward_cpu(const BlobVec& top,
                                            const std::vector<bool>& propagate_down,
                                            const BlobVec& bottom) {
  this->RejectLabelGradient(propagate_down, 1);
  DOPPIO_ENSURE(propagate_down.size() < 3 || !propagate_down[2])
      << this->Describe() << " cannot backpropagate to the infogain matrix (bottom 2)";
  if (!propagate_down[0]) return;
  const Dtype* prob = prob_.cpu_data();
  const Dtype* labels = bottom[1]->cpu_data();
  const Dtype* H = Infogain(bottom).cpu_data();
  Dtype* row_sums = row_sums_.mutable_cpu_data();
  for (int l = 0; l < num_classes_; ++l) {
    Dtype sum = 0;
    for (int k = 0; k < num_classes_; ++k) sum += H[l * num_classes_ + k];
    row_sums[l] = sum;
  }
  Dtype* dx = bottom[0]->mutable_cpu_diff();
  const int dim = num_classes_ * inner_num_;
  int count = 0;
  // d/dx_k of -sum_m H[l][m] log p_m = p_k * sum_m H[l][m] - H[l][k].
  for (int i = 0; i < outer_num_; ++i) {
    for (int j = 0; j < inner_num_; ++j) {
      const int label = CheckedLabel(labels, i * inner_num_ + j);
      const int base = i * dim + j;
      if (label < 0) {
        for (int k = 0; k < num_classes_; ++k) dx[base + k * inner_num_] = 0;
        continue;
      }
      const Dtype* h = H + label * num_classes_;
      for (int k = 0; k < num_classes_; ++k) {
        dx[base + k * inner_num_] = prob[base + k * inner_num_] * row_sums[label] - h[k];
      }
      ++count;
    }
  }
  const Dtype scale = top[0]->cpu_diff()[0] / LossLayer<Dtype>::GetNormalizer(
                                                  normalization_, outer_num_, inner_num_, count);
  cpu_scal(bottom[0]->count(), scale, dx);
}

DOPPIO_INSTANTIATE_CLASS(InfogainLossLayer);
REGISTER_LAYER_CLASS(InfogainLoss);

}  // namespace doppio
