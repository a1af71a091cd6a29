#include "doppio/layers/slice_layer.hpp"

#include "doppio/core/layer_registry.hpp"
#include "doppio/util/math_functions.hpp"

namespace doppio {

template <typename Dtype>
void SliceLayer<Dtype>::LayerSetUp(const BlobVec& bottom, const BlobVec& top) {
  const SliceParameter& param = this->layer_param_.slice_param();
  DOPPIO_ENSURE(!(param.has_axis() && param.has_slice_dim()))
      << this->Describe() << ": give slice_param.axis or the legacy slice_dim, not both";
  DOPPIO_ENSURE(param.slice_point_size() == 0 ||
                param.slice_point_size() == static_cast<int>(top.size()) - 1)
      << this->Describe() << ": " << param.slice_point_size() << " slice_point value(s) for "
      << top.size() << " tops; give one fewer than the tops, or none for an equal split";
}

template <typename Dtype>
void SliceLayer<Dtype>::Reshape(const BlobVec& bottom, const BlobVec& top) {
  const SliceParameter& param = this->layer_param_.slice_param();
  const int num_axes = bottom[0]->num_axes();
  if (param.has_slice_dim()) {
    DOPPIO_ENSURE(param.slice_dim() < static_cast<unsigned>(num_axes))
        << this->Describe() << ": slice_dim " << param.slice_dim() << " is out of range for "
        << num_axes << "-d bottom of shape " << bottom[0]->shape_string();
    slice_axis_ = static_cast<int>(param.slice_dim());
  } else {
    DOPPIO_ENSURE(param.axis() >= -num_axes && param.axis() < num_axes)
        << this->Describe() << ": slice_param.axis " << param.axis() << " is out of range for "
        << num_axes << "-d bottom of shape " << bottom[0]->shape_string();
    slice_axis_ = bottom[0]->CanonicalAxisIndex(param.axis());
  }
  const int axis_size = bottom[0]->shape(slice_axis_);
  num_slices_ = bottom[0]->count(0, slice_axis_);
  slice_size_ = bottom[0]->count(slice_axis_ + 1);
  const int num_tops = static_cast<int>(top.size());
  std::vector<int> sizes;
  if (param.slice_point_size() > 0) {
    long long previous = 0;
    for (int i = 0; i < param.slice_point_size(); ++i) {
      const long long point = param.slice_point(i);
      DOPPIO_ENSURE(point > previous && point < axis_size)
          << this->Describe() << ": slice_point[" << i << "] = " << point
          << " must exceed the previous slice point (" << previous
          << ") and lie inside the slice axis " << slice_axis_ << " of size " << axis_size
          << " (bottom shape " << bottom[0]->shape_string() << ")";
      sizes.push_back(static_cast<int>(point - previous));
      previous = point;
    }
    sizes.push_back(axis_size - static_cast<int>(previous));
  } else {
    DOPPIO_ENSURE(axis_size % num_tops == 0)
        << this->Describe() << ": the slice axis " << slice_axis_ << " of size " << axis_size
        << " (bottom shape " << bottom[0]->shape_string() << ") does not divide into " << num_tops
        << " equal parts; give slice_point values";
    sizes.assign(num_tops, axis_size / num_tops);
  }
  std::vector<int> top_shape = bottom[0]->shape();
  for (int i = 0; i < num_tops; ++i) {
    top_shape[slice_axis_] = sizes[i];
    top[i]->Reshape(top_shape);
  }
  if (num_tops == 1) {
    top[0]->ShareData(*bottom[0]);
    top[0]->ShareDiff(*bottom[0]);
  }
}

template <typename Dtype>
void SliceLayer<Dtype>::Forward_cpu(const BlobVec& bottom, const BlobVec& top) {
  if (top.size() == 1 || bottom[0]->count() == 0) return;
  const Dtype* bottom_data = bottom[0]->cpu_data();
  const int bottom_axis = bottom[0]->shape(slice_axis_);
  int offset = 0;
  for (auto* t : top) {
    const int axis = t->shape(slice_axis_);
    const int chunk = axis * slice_size_;
    if (chunk > 0) {
      Dtype* data = t->mutable_cpu_data();
      for (int n = 0; n < num_slices_; ++n) {
        cpu_copy(chunk, bottom_data + (n * bottom_axis + offset) * slice_size_, data + n * chunk);
      }
    }
    offset += axis;
  }
}

template <typename Dtype>
void SliceLayer<Dtype>::Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                                     const BlobVec& bottom) {
  if (!propagate_down[0] || top.size() == 1 || bottom[0]->count() == 0) return;
  // The tops tile the bottom exactly, so every bottom diff element is overwritten.
  Dtype* bottom_diff = bottom[0]->mutable_cpu_diff();
  const int bottom_axis = bottom[0]->shape(slice_axis_);
  int offset = 0;
  for (auto* t : top) {
    const int axis = t->shape(slice_axis_);
    const int chunk = axis * slice_size_;
    if (chunk > 0) {
      const Dtype* diff = t->cpu_diff();
      for (int n = 0; n < num_slices_; ++n) {
        cpu_copy(chunk, diff + n * chunk, bottom_diff + (n * bottom_axis + offset) * slice_size_);
      }
    }
    offset += axis;
  }
}

DOPPIO_INSTANTIATE_CLASS(SliceLayer);
REGISTER_LAYER_CLASS(Slice);

}  // namespace doppio
