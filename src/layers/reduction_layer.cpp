#include "doppio/layers/reduction_layer.hpp"

#include "doppio/core/layer_registry.hpp"
#include "doppio/util/math_functions.hpp"

namespace doppio {

template <typename Dtype>
void ReductionLayer<Dtype>::LayerSetUp(const BlobVec& bottom, const BlobVec& top) {
  op_ = this->layer_param_.reduction_param().operation();
}

template <typename Dtype>
void ReductionLayer<Dtype>::Reshape(const BlobVec& bottom, const BlobVec& top) {
  const ReductionParameter& param = this->layer_param_.reduction_param();
  const int num_axes = bottom[0]->num_axes();
  DOPPIO_ENSURE(param.axis() >= -num_axes && param.axis() < num_axes)
      << this->Describe() << ": reduction_param.axis " << param.axis()
      << " is out of range for bottom of shape " << bottom[0]->shape_string();
  axis_ = bottom[0]->CanonicalAxisIndex(param.axis());
  // Everything from axis on collapses, so axis 0 gives a scalar top.
  top[0]->Reshape(std::vector<int>(bottom[0]->shape().begin(), bottom[0]->shape().begin() + axis_));
  num_ = bottom[0]->count(0, axis_);
  dim_ = bottom[0]->count(axis_);
  coeff_ = param.coeff();
  if (op_ == ReductionParameter::MEAN && dim_ > 0) coeff_ /= dim_;
  if ((op_ == ReductionParameter::SUM || op_ == ReductionParameter::MEAN) &&
      static_cast<int>(ones_.size()) < dim_) {
    ones_.assign(dim_, Dtype(1));
  }
}

template <typename Dtype>
void ReductionLayer<Dtype>::Forward_cpu(const BlobVec& bottom, const BlobVec& top) {
  if (num_ == 0) return;
  Dtype* top_data = top[0]->mutable_cpu_data();
  if (dim_ == 0) {
    cpu_set(num_, Dtype(0), top_data);
    return;
  }
  const Dtype* bottom_data = bottom[0]->cpu_data();
  switch (op_) {
    case ReductionParameter::SUM:
    case ReductionParameter::MEAN:
      cpu_gemv(Trans::kNo, num_, dim_, coeff_, bottom_data, ones_.data(), Dtype(0), top_data);
      return;
    case ReductionParameter::ASUM:
      for (int i = 0; i < num_; ++i) top_data[i] = cpu_asum(dim_, bottom_data + i * dim_);
      break;
    case ReductionParameter::SUMSQ:
      for (int i = 0; i < num_; ++i) {
        const Dtype* row = bottom_data + i * dim_;
        top_data[i] = cpu_dot(dim_, row, row);
      }
      break;
    default:
      DOPPIO_FAIL() << this->Describe() << ": unknown reduction_param.operation " << op_;
  }
  if (coeff_ != Dtype(1)) cpu_scal(num_, coeff_, top_data);
}

template <typename Dtype>
void ReductionLayer<Dtype>::Backward_cpu(const BlobVec& top,
                                         const std::vector<bool>& propagate_down,
                                         const BlobVec& bottom) {
  if (!propagate_down[0] || num_ == 0 || dim_ == 0) return;
  const Dtype* top_diff = top[0]->cpu_diff();
  const Dtype* bottom_data = bottom[0]->cpu_data();
  Dtype* bottom_diff = bottom[0]->mutable_cpu_diff();
  for (int i = 0; i < num_; ++i) {
    const Dtype scale = top_diff[i] * coeff_;
    const Dtype* x = bottom_data + i * dim_;
    Dtype* dx = bottom_diff + i * dim_;
    switch (op_) {
      case ReductionParameter::SUM:
      case ReductionParameter::MEAN:
        cpu_set(dim_, scale, dx);
        break;
      case ReductionParameter::ASUM:
        for (int j = 0; j < dim_; ++j) {
          dx[j] = x[j] > Dtype(0) ? scale : (x[j] < Dtype(0) ? -scale : Dtype(0));
        }
        break;
      case ReductionParameter::SUMSQ:
        cpu_scale(dim_, 2 * scale, x, dx);
        break;
      default:
        DOPPIO_FAIL() << this->Describe() << ": unknown reduction_param.operation " << op_;
    }
  }
}

DOPPIO_INSTANTIATE_CLASS(ReductionLayer);
REGISTER_LAYER_CLASS(Reduction);

}  // namespace doppio
