#include "doppio/layers/crop_layer.hpp"

#include "doppio/core/layer_registry.hpp"
#include "doppio/util/math_functions.hpp"

namespace doppio {

template <typename Dtype>
void CropLayer<Dtype>::LayerSetUp(const BlobVec& bottom, const BlobVec& top) {
  const CropParameter& param = this->layer_param_.crop_param();
  const int num_axes = bottom[0]->num_axes();
  DOPPIO_ENSURE(param.axis() >= -num_axes && param.axis() < num_axes)
      << this->Describe() << ": crop_param.axis " << param.axis()
      << " is out of range for bottom[0] of shape " << bottom[0]->shape_string();
  start_axis_ = bottom[0]->CanonicalAxisIndex(param.axis());
  DOPPIO_ENSURE(param.offset_size() <= 1 || param.offset_size() == num_axes - start_axis_)
      << this->Describe() << ": crop_param has " << param.offset_size()
      << " offset values; give one for all cropped axes or one per axis from axis " << start_axis_
      << " on (" << num_axes - start_axis_ << ")";
}

template <typename Dtype>
void CropLayer<Dtype>::Reshape(const BlobVec& bottom, const BlobVec& top) {
  const CropParameter& param = this->layer_param_.crop_param();
  const int num_axes = bottom[0]->num_axes();
  DOPPIO_ENSURE(bottom[1]->num_axes() == num_axes)
      << this->Describe() << ": bottom[1] of shape " << bottom[1]->shape_string()
      << " must have as many axes as bottom[0] of shape " << bottom[0]->shape_string();
  top_shape_ = bottom[0]->shape();
  offsets_.assign(num_axes, 0);
  bottom_strides_.resize(num_axes);
  for (int i = 0; i < num_axes; ++i) {
    bottom_strides_[i] = bottom[0]->count(i + 1);
    if (i < start_axis_) continue;
    long long offset = 0;
    if (param.offset_size() == 1) {
      offset = param.offset(0);
    } else if (param.offset_size() > 1) {
      offset = param.offset(i - start_axis_);
    }
    const int size = bottom[1]->shape(i);
    DOPPIO_ENSURE(offset + size <= bottom[0]->shape(i))
        << this->Describe() << ": on axis " << i << " the crop offset " << offset
        << " plus the size " << size << " of bottom[1] (shape " << bottom[1]->shape_string()
        << ") exceeds bottom[0]'s size " << bottom[0]->shape(i) << " (shape "
        << bottom[0]->shape_string() << ")";
    top_shape_[i] = size;
    offsets_[i] = static_cast<int>(offset);
  }
  top[0]->Reshape(top_shape_);
}

template <typename Dtype>
void CropLayer<Dtype>::CopyWindow(bool bottom_to_top, const Dtype* from, Dtype* to) const {
  const int n = static_cast<int>(top_shape_.size());
  if (n == 0) {
    to[0] = from[0];
    return;
  }
  const int row = top_shape_[n - 1];
  int rows = 1;
  for (int i = 0; i < n - 1; ++i) rows *= top_shape_[i];
  if (row == 0 || rows == 0) return;
  // Walks the window's rows like an odometer, updating the bottom offset incrementally.
  int index[kMaxBlobAxes] = {0};
  int source = 0;
  for (int i = 0; i < n; ++i) source += offsets_[i] * bottom_strides_[i];
  for (int r = 0; r < rows; ++r) {
    if (bottom_to_top) {
      cpu_copy(row, from + source, to + r * row);
    } else {
      cpu_copy(row, from + r * row, to + source);
    }
    for (int a = n - 2; a >= 0; --a) {
      source += bottom_strides_[a];
      if (++index[a] < top_shape_[a]) break;
      source -= index[a] * bottom_strides_[a];
      index[a] = 0;
    }
  }
}

template <typename Dtype>
void CropLayer<Dtype>::Forward_cpu(const BlobVec& bottom, const BlobVec& top) {
  if (top[0]->count() == 0) return;
  CopyWindow(true, bottom[0]->cpu_data(), top[0]->mutable_cpu_data());
}

template <typename Dtype>
void CropLayer<Dtype>::Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                                    const BlobVec& bottom) {
  if (!propagate_down[0] || bottom[0]->count() == 0) return;
  Dtype* bottom_diff = bottom[0]->mutable_cpu_diff();
  cpu_set(bottom[0]->count(), Dtype(0), bottom_diff);
  if (top[0]->count() == 0) return;
  CopyWindow(false, top[0]->cpu_diff(), bottom_diff);
}

DOPPIO_INSTANTIATE_CLASS(CropLayer);
REGISTER_LAYER_CLASS(Crop);

}  // namespace doppio
