#include "doppio/layers/flatten_layer.hpp"

#include "doppio/core/layer_registry.hpp"

namespace doppio {

template <typename Dtype>
void FlattenLayer<Dtype>::Reshape(const BlobVec& bottom, const BlobVec& top) {
  DOPPIO_ENSURE(top[0] != bottom[0]) << this->Describe() << " cannot work in place";
  const FlattenParameter& param = this->layer_param_.flatten_param();
  const int num_axes = bottom[0]->num_axes();
  DOPPIO_ENSURE(param.axis() >= -num_axes && param.axis() < num_axes)
      << this->Describe() << ": flatten_param.axis " << param.axis() << " is out of range for "
      << "bottom of shape " << bottom[0]->shape_string();
  DOPPIO_ENSURE(param.end_axis() >= -num_axes && param.end_axis() < num_axes)
      << this->Describe() << ": flatten_param.end_axis " << param.end_axis()
      << " is out of range for bottom of shape " << bottom[0]->shape_string();
  const int start = bottom[0]->CanonicalAxisIndex(param.axis());
  const int end = bottom[0]->CanonicalAxisIndex(param.end_axis());
  // end == start - 1 flattens an empty range, inserting an axis of size 1 (as Caffe does).
  DOPPIO_ENSURE(end + 1 >= start) << this->Describe() << ": flatten_param.end_axis ("
                                  << param.end_axis() << ") lies before axis (" << param.axis()
                                  << ") for bottom of shape " << bottom[0]->shape_string();
  std::vector<int> top_shape(bottom[0]->shape().begin(), bottom[0]->shape().begin() + start);
  top_shape.push_back(bottom[0]->count(start, end + 1));
  top_shape.insert(top_shape.end(), bottom[0]->shape().begin() + end + 1, bottom[0]->shape().end());
  top[0]->Reshape(top_shape);
  top[0]->ShareData(*bottom[0]);
  top[0]->ShareDiff(*bottom[0]);
}

DOPPIO_INSTANTIATE_CLASS(FlattenLayer);
REGISTER_LAYER_CLASS(Flatten);

}  // namespace doppio
