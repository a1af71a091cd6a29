#include "doppio/layers/reshape_layer.hpp"

#include <climits>
#include <sstream>

#include "doppio/core/layer_registry.hpp"

namespace doppio {

template <typename Dtype>
std::string ReshapeLayer<Dtype>::ShapeParamString() const {
  const BlobShape& shape = this->layer_param_.reshape_param().shape();
  std::ostringstream out;
  out << "{";
  for (int i = 0; i < shape.dim_size(); ++i) out << (i ? ", " : "") << shape.dim(i);
  out << "}";
  return out.str();
}

template <typename Dtype>
void ReshapeLayer<Dtype>::LayerSetUp(const BlobVec& bottom, const BlobVec& top) {
  DOPPIO_ENSURE(top[0] != bottom[0]) << this->Describe() << " cannot work in place";
  const ReshapeParameter& param = this->layer_param_.reshape_param();
  DOPPIO_ENSURE(param.num_axes() >= -1)
      << this->Describe() << ": reshape_param.num_axes is " << param.num_axes()
      << "; it must be >= 0, or -1 for all axes from axis on";
  copy_axes_.clear();
  inferred_axis_ = -1;
  constant_count_ = 1;
  const BlobShape& shape = param.shape();
  for (int i = 0; i < shape.dim_size(); ++i) {
    const long long dim = shape.dim(i);
    if (dim == 0) {
      copy_axes_.push_back(i);
    } else if (dim == -1) {
      DOPPIO_ENSURE(inferred_axis_ == -1)
          << this->Describe() << ": reshape_param.shape " << ShapeParamString()
          << " has more than one -1; at most one dimension can be inferred";
      inferred_axis_ = i;
    } else {
      DOPPIO_ENSURE(dim > 0 && dim <= INT_MAX)
          << this->Describe() << ": reshape_param.shape " << ShapeParamString() << " has dim " << i
          << " = " << dim << "; a dimension must be positive, 0 (copy the bottom's) or -1 (infer)";
      constant_count_ *= dim;
      DOPPIO_ENSURE(constant_count_ <= INT_MAX)
          << this->Describe() << ": reshape_param.shape " << ShapeParamString() << " is too large";
    }
  }
}

template <typename Dtype>
void ReshapeLayer<Dtype>::Reshape(const BlobVec& bottom, const BlobVec& top) {
  const ReshapeParameter& param = this->layer_param_.reshape_param();
  const int bottom_axes = bottom[0]->num_axes();
  // A negative axis counts from the end, -1 being the position after the last axis.
  const int start = param.axis() >= 0 ? param.axis() : bottom_axes + param.axis() + 1;
  DOPPIO_ENSURE(start >= 0 && start <= bottom_axes)
      << this->Describe() << ": reshape_param.axis " << param.axis()
      << " is out of range for bottom of shape " << bottom[0]->shape_string();
  const int end = param.num_axes() == -1 ? bottom_axes : start + param.num_axes();
  DOPPIO_ENSURE(end <= bottom_axes)
      << this->Describe() << ": reshape_param axis " << param.axis() << " with num_axes "
      << param.num_axes() << " reaches past the last axis of bottom of shape "
      << bottom[0]->shape_string();
  const BlobShape& shape = param.shape();
  const std::vector<int>& bottom_shape = bottom[0]->shape();
  std::vector<int> top_shape(bottom_shape.begin(), bottom_shape.begin() + start);
  for (int i = 0; i < shape.dim_size(); ++i) top_shape.push_back(static_cast<int>(shape.dim(i)));
  top_shape.insert(top_shape.end(), bottom_shape.begin() + end, bottom_shape.end());
  for (int copy : copy_axes_) {
    DOPPIO_ENSURE(start + copy < bottom_axes)
        << this->Describe() << ": reshape_param.shape " << ShapeParamString() << " has a 0 at dim "
        << copy << " but bottom of shape " << bottom[0]->shape_string() << " has no axis "
        << start + copy << " to copy";
    top_shape[start + copy] = bottom_shape[start + copy];
  }
  if (inferred_axis_ >= 0) {
    long long known = constant_count_ * bottom[0]->count(0, start) * bottom[0]->count(end);
    for (int copy : copy_axes_) known *= top_shape[start + copy];
    const long long count = bottom[0]->count();
    DOPPIO_ENSURE(known > 0 && count % known == 0)
        << this->Describe() << ": cannot infer the -1 in reshape_param.shape " << ShapeParamString()
        << ": bottom of shape " << bottom[0]->shape_string()
        << " has a count not divisible by the product of the other dimensions (" << known << ")";
    top_shape[start + inferred_axis_] = static_cast<int>(count / known);
  }
  long long top_count = 1;
  for (int d : top_shape) top_count *= d;
  DOPPIO_ENSURE(top_count == bottom[0]->count())
      << this->Describe() << ": cannot reshape bottom of shape " << bottom[0]->shape_string()
      << " into shape " << ShapeString(top_shape) << " (reshape_param.shape " << ShapeParamString()
      << "): the counts differ";
  top[0]->Reshape(top_shape);
  top[0]->ShareData(*bottom[0]);
  top[0]->ShareDiff(*bottom[0]);
}

DOPPIO_INSTANTIATE_CLASS(ReshapeLayer);
REGISTER_LAYER_CLASS(Reshape);

}  // namespace doppio
