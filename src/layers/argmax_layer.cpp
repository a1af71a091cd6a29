#include "doppio/layers/argmax_layer.hpp"

#include <algorithm>
#include <climits>
#include <functional>

#include "doppio/core/layer_registry.hpp"

namespace doppio {

template <typename Dtype>
void ArgMaxLayer<Dtype>::LayerSetUp(const BlobVec& bottom, const BlobVec& top) {
  const ArgMaxParameter& param = this->layer_param_.argmax_param();
  out_max_val_ = param.out_max_val();
  has_axis_ = param.has_axis();
  DOPPIO_ENSURE(param.top_k() >= 1 && param.top_k() <= INT_MAX)
      << this->Describe() << ": argmax_param.top_k is " << param.top_k() << "; it must be >= 1";
  top_k_ = static_cast<int>(param.top_k());
}

template <typename Dtype>
void ArgMaxLayer<Dtype>::Reshape(const BlobVec& bottom, const BlobVec& top) {
  const ArgMaxParameter& param = this->layer_param_.argmax_param();
  const int num_axes = bottom[0]->num_axes();
  int dim = 0;
  if (has_axis_) {
    DOPPIO_ENSURE(param.axis() >= -num_axes && param.axis() < num_axes)
        << this->Describe() << ": argmax_param.axis " << param.axis()
        << " is out of range for bottom of shape " << bottom[0]->shape_string();
    axis_ = bottom[0]->CanonicalAxisIndex(param.axis());
    dim = bottom[0]->shape(axis_);
    DOPPIO_ENSURE(top_k_ <= dim) << this->Describe() << ": argmax_param.top_k " << top_k_
                                 << " exceeds the size " << dim << " of axis " << axis_
                                 << " of bottom of shape " << bottom[0]->shape_string();
  } else {
    DOPPIO_ENSURE(num_axes >= 1) << this->Describe() << " needs a bottom with at least one axis";
    dim = bottom[0]->count(1);
    DOPPIO_ENSURE(top_k_ <= dim) << this->Describe() << ": argmax_param.top_k " << top_k_
                                 << " exceeds the " << dim << " values per item of bottom of shape "
                                 << bottom[0]->shape_string();
  }
  std::vector<int> shape;
  if (has_axis_) {
    // The axis keeps its place, holding indices, or values with out_max_val.
    shape = bottom[0]->shape();
    shape[axis_] = top_k_;
  } else {
    // (N, 1, top_k) with indices, (N, 2, top_k) with indices then values for out_max_val.
    shape.assign(std::max(num_axes, 3), 1);
    shape[0] = bottom[0]->shape(0);
    shape[1] = out_max_val_ ? 2 : 1;
    shape[2] = top_k_;
  }
  top[0]->Reshape(shape);
  scratch_.resize(dim);
}

template <typename Dtype>
void ArgMaxLayer<Dtype>::Forward_cpu(const BlobVec& bottom, const BlobVec& top) {
  const int dim = has_axis_ ? bottom[0]->shape(axis_) : bottom[0]->count(1);
  const int stride = has_axis_ ? bottom[0]->count(axis_ + 1) : 1;
  if (dim == 0 || bottom[0]->count() == 0) return;
  const int num = bottom[0]->count() / dim;
  const Dtype* bottom_data = bottom[0]->cpu_data();
  Dtype* top_data = top[0]->mutable_cpu_data();
  for (int i = 0; i < num; ++i) {
    const int outer = i / stride;
    const int inner = i % stride;
    for (int j = 0; j < dim; ++j) {
      scratch_[j] = std::make_pair(bottom_data[(outer * dim + j) * stride + inner], j);
    }
    // Pairs compare by value, then index: equal values list the higher index first (as Caffe).
    std::partial_sort(scratch_.begin(), scratch_.begin() + top_k_, scratch_.end(),
                      std::greater<std::pair<Dtype, int>>());
    for (int j = 0; j < top_k_; ++j) {
      if (has_axis_) {
        top_data[(outer * top_k_ + j) * stride + inner] =
            out_max_val_ ? scratch_[j].first : static_cast<Dtype>(scratch_[j].second);
      } else if (out_max_val_) {
        top_data[2 * i * top_k_ + j] = static_cast<Dtype>(scratch_[j].second);
        top_data[2 * i * top_k_ + top_k_ + j] = scratch_[j].first;
      } else {
        top_data[i * top_k_ + j] = static_cast<Dtype>(scratch_[j].second);
      }
    }
  }
}

template <typename Dtype>
void ArgMaxLayer<Dtype>::Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                                      const BlobVec& bottom) {
  for (bool down : propagate_down) {
    DOPPIO_ENSURE(!down) << this->Describe()
                         << " has no gradient; it cannot backpropagate to its bottom";
  }
}

DOPPIO_INSTANTIATE_CLASS(ArgMaxLayer);
REGISTER_LAYER_CLASS(ArgMax);

}  // namespace doppio
