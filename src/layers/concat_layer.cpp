#include "doppio/layers/concat_layer.hpp"

#include "doppio/core/layer_registry.hpp"
#include "doppio/util/math_functions.hpp"

namespace doppio {

template <typename Dtype>
void ConcatLayer<Dtype>::LayerSetUp(const BlobVec& bottom, const BlobVec& top) {
  const ConcatParameter& param = this->layer_param_.concat_param();
  DOPPIO_ENSURE(!(param.has_axis() && param.has_concat_dim()))
      << this->Describe() << ": give concat_param.axis or the legacy concat_dim, not both";
}

template <typename Dtype>
void ConcatLayer<Dtype>::Reshape(const BlobVec& bottom, const BlobVec& top) {
  const ConcatParameter& param = this->layer_param_.concat_param();
  const int num_axes = bottom[0]->num_axes();
  if (param.has_concat_dim()) {
    DOPPIO_ENSURE(param.concat_dim() < static_cast<unsigned>(num_axes))
        << this->Describe() << ": concat_dim " << param.concat_dim() << " is out of range for "
        << num_axes << "-d bottom[0] of shape " << bottom[0]->shape_string();
    concat_axis_ = static_cast<int>(param.concat_dim());
  } else {
    DOPPIO_ENSURE(param.axis() >= -num_axes && param.axis() < num_axes)
        << this->Describe() << ": concat_param.axis " << param.axis() << " is out of range for "
        << num_axes << "-d bottom[0] of shape " << bottom[0]->shape_string();
    concat_axis_ = bottom[0]->CanonicalAxisIndex(param.axis());
  }
  std::vector<int> top_shape = bottom[0]->shape();
  for (std::size_t i = 1; i < bottom.size(); ++i) {
    bool matches = bottom[i]->num_axes() == num_axes;
    for (int j = 0; matches && j < num_axes; ++j) {
      matches = j == concat_axis_ || bottom[i]->shape(j) == top_shape[j];
    }
    DOPPIO_ENSURE(matches) << this->Describe() << ": bottom[" << i << "] has shape "
                           << bottom[i]->shape_string() << " but bottom[0] has shape "
                           << bottom[0]->shape_string()
                           << "; all bottoms must agree on every axis but the concat axis "
                           << concat_axis_;
    top_shape[concat_axis_] += bottom[i]->shape(concat_axis_);
  }
  top[0]->Reshape(top_shape);
  num_concats_ = bottom[0]->count(0, concat_axis_);
  concat_input_size_ = bottom[0]->count(concat_axis_ + 1);
  if (bottom.size() == 1) {
    top[0]->ShareData(*bottom[0]);
    top[0]->ShareDiff(*bottom[0]);
  }
}

template <typename Dtype>
void ConcatLayer<Dtype>::Forward_cpu(const BlobVec& bottom, const BlobVec& top) {
  if (bottom.size() == 1 || top[0]->count() == 0) return;
  Dtype* top_data = top[0]->mutable_cpu_data();
  const int top_axis = top[0]->shape(concat_axis_);
  int offset = 0;
  for (auto* b : bottom) {
    const int axis = b->shape(concat_axis_);
    const int chunk = axis * concat_input_size_;
    if (chunk > 0) {
      const Dtype* data = b->cpu_data();
      for (int n = 0; n < num_concats_; ++n) {
        cpu_copy(chunk, data + n * chunk, top_data + (n * top_axis + offset) * concat_input_size_);
      }
    }
    offset += axis;
  }
}

template <typename Dtype>
void ConcatLayer<Dtype>::Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                                      const BlobVec& bottom) {
  if (bottom.size() == 1 || top[0]->count() == 0) return;
  const Dtype* top_diff = top[0]->cpu_diff();
  const int top_axis = top[0]->shape(concat_axis_);
  int offset = 0;
  for (std::size_t i = 0; i < bottom.size(); ++i) {
    const int axis = bottom[i]->shape(concat_axis_);
    const int chunk = axis * concat_input_size_;
    if (propagate_down[i] && chunk > 0) {
      Dtype* diff = bottom[i]->mutable_cpu_diff();
      for (int n = 0; n < num_concats_; ++n) {
        cpu_copy(chunk, top_diff + (n * top_axis + offset) * concat_input_size_, diff + n * chunk);
      }
    }
    offset += axis;
  }
}

DOPPIO_INSTANTIATE_CLASS(ConcatLayer);
REGISTER_LAYER_CLASS(Concat);

}  // namespace doppio
