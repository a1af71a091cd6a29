#include "doppio/layers/accuracy_layer.hpp"

#include <algorithm>
#include <climits>

#include "doppio/core/layer_registry.hpp"
#include "doppio/util/math_functions.hpp"

namespace doppio {

template <typename Dtype>
void AccuracyLayer<Dtype>::LayerSetUp(const BlobVec& bottom, const BlobVec& top) {
  const AccuracyParameter& param = this->layer_param_.accuracy_param();
  DOPPIO_ENSURE(param.top_k() >= 1 && param.top_k() <= static_cast<unsigned>(INT_MAX))
      << this->Describe() << ": accuracy_param.top_k must be a positive int, got " << param.top_k();
  top_k_ = static_cast<int>(param.top_k());
  has_ignore_label_ = param.has_ignore_label();
  ignore_label_ = param.ignore_label();
}

template <typename Dtype>
void AccuracyLayer<Dtype>::Reshape(const BlobVec& bottom, const BlobVec& top) {
  const int axes = bottom[0]->num_axes();
  const int axis = this->layer_param_.accuracy_param().axis();
  DOPPIO_ENSURE(axis >= -axes && axis < axes)
      << this->Describe() << ": accuracy_param.axis " << axis << " is out of range for bottom "
      << bottom[0]->shape_string();
  label_axis_ = axis < 0 ? axis + axes : axis;
  const int num_classes = bottom[0]->shape(label_axis_);
  DOPPIO_ENSURE(top_k_ <= num_classes)
      << this->Describe() << ": accuracy_param.top_k (" << top_k_
      << ") must not exceed the number of classes (" << num_classes << ")";
  outer_num_ = bottom[0]->count(0, label_axis_);
  inner_num_ = bottom[0]->count(label_axis_ + 1);
  DOPPIO_ENSURE(outer_num_ * inner_num_ == bottom[1]->count())
      << this->Describe() << ": the number of labels (" << bottom[1]->count() << ", shape "
      << bottom[1]->shape_string() << ") must equal the number of predictions ("
      << outer_num_ * inner_num_ << ": the prediction shape " << bottom[0]->shape_string()
      << " without the label axis " << label_axis_ << ")";
  top[0]->Reshape(std::vector<int>{});
  if (top.size() > 1) top[1]->Reshape(std::vector<int>{num_classes});
  class_counts_.assign(num_classes, 0);
}

template <typename Dtype>
void AccuracyLayer<Dtype>::Forward_cpu(const BlobVec& bottom, const BlobVec& top) {
  const Dtype* scores = bottom[0]->cpu_data();
  const Dtype* labels = bottom[1]->cpu_data();
  const int num_classes = bottom[0]->shape(label_axis_);
  const int dim = num_classes * inner_num_;
  Dtype* per_class = top.size() > 1 ? top[1]->mutable_cpu_data() : nullptr;
  if (per_class) cpu_set(num_classes, Dtype(0), per_class);
  std::fill(class_counts_.begin(), class_counts_.end(), 0);
  int correct = 0;
  int count = 0;
  for (int i = 0; i < outer_num_; ++i) {
    for (int j = 0; j < inner_num_; ++j) {
      const int label = static_cast<int>(labels[i * inner_num_ + j]);
      if (has_ignore_label_ && label == ignore_label_) continue;
      DOPPIO_ENSURE(label >= 0 && label < num_classes)
          << this->Describe() << ": label value " << label << " (at label index "
          << i * inner_num_ + j << ") is outside the class range [0, " << num_classes << ")";
      ++class_counts_[label];
      ++count;
      const Dtype* s = scores + i * dim + j;
      const Dtype true_score = s[label * inner_num_];
      // The true class itself scores >= true_score, hence the start at -1.
      int at_least_as_good = -1;
      for (int c = 0; c < num_classes && at_least_as_good < top_k_; ++c) {
        at_least_as_good += s[c * inner_num_] >= true_score ? 1 : 0;
      }
      if (at_least_as_good < top_k_) {
        ++correct;
        if (per_class) per_class[label] += 1;
      }
    }
  }
  top[0]->mutable_cpu_data()[0] = count == 0 ? Dtype(0) : Dtype(correct) / Dtype(count);
  if (per_class) {
    for (int c = 0; c < num_classes; ++c) {
      per_class[c] = class_counts_[c] == 0 ? Dtype(0) : per_class[c] / Dtype(class_counts_[c]);
    }
  }
}

template <typename Dtype>
void AccuracyLayer<Dtype>::Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                                        const BlobVec& bottom) {
  for (std::size_t i = 0; i < propagate_down.size(); ++i) {
    DOPPIO_ENSURE(!propagate_down[i])
        << this->Describe() << " has no backward pass (gradient requested for bottom " << i << ")";
  }
}

DOPPIO_INSTANTIATE_CLASS(AccuracyLayer);
REGISTER_LAYER_CLASS(Accuracy);

}  // namespace doppio
