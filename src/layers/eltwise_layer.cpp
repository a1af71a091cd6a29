#include "doppio/layers/eltwise_layer.hpp"

#include "doppio/core/layer_registry.hpp"
#include "doppio/util/math_functions.hpp"

namespace doppio {

template <typename Dtype>
void EltwiseLayer<Dtype>::LayerSetUp(const BlobVec& bottom, const BlobVec& top) {
  const EltwiseParameter& param = this->layer_param_.eltwise_param();
  op_ = param.operation();
  stable_prod_grad_ = param.stable_prod_grad();
  DOPPIO_ENSURE(param.coeff_size() == 0 || op_ == EltwiseParameter::SUM)
      << this->Describe() << ": eltwise_param.coeff applies only to operation SUM";
  DOPPIO_ENSURE(param.coeff_size() == 0 || param.coeff_size() == static_cast<int>(bottom.size()))
      << this->Describe() << ": eltwise_param has " << param.coeff_size() << " coeff value(s) for "
      << bottom.size() << " bottoms; give one per bottom";
  coeffs_.assign(bottom.size(), Dtype(1));
  for (int i = 0; i < param.coeff_size(); ++i) coeffs_[i] = param.coeff(i);
}

template <typename Dtype>
void EltwiseLayer<Dtype>::Reshape(const BlobVec& bottom, const BlobVec& top) {
  for (std::size_t i = 1; i < bottom.size(); ++i) {
    DOPPIO_ENSURE(bottom[i]->shape() == bottom[0]->shape())
        << this->Describe() << ": bottom[" << i << "] has shape " << bottom[i]->shape_string()
        << " but bottom[0] has shape " << bottom[0]->shape_string()
        << "; all bottoms must have the same shape";
  }
  top[0]->ReshapeLike(*bottom[0]);
  if (op_ == EltwiseParameter::MAX) max_idx_.resize(bottom[0]->count());
}

template <typename Dtype>
void EltwiseLayer<Dtype>::Forward_cpu(const BlobVec& bottom, const BlobVec& top) {
  const int count = top[0]->count();
  if (count == 0) return;
  Dtype* top_data = top[0]->mutable_cpu_data();
  switch (op_) {
    case EltwiseParameter::PROD:
      cpu_mul(count, bottom[0]->cpu_data(), bottom[1]->cpu_data(), top_data);
      for (std::size_t i = 2; i < bottom.size(); ++i) {
        cpu_mul(count, top_data, bottom[i]->cpu_data(), top_data);
      }
      break;
    case EltwiseParameter::SUM:
      // Starting from bottom[0] (not from zero) keeps an in-place bottom[0] intact.
      cpu_scale(count, coeffs_[0], bottom[0]->cpu_data(), top_data);
      for (std::size_t i = 1; i < bottom.size(); ++i) {
        cpu_axpy(count, coeffs_[i], bottom[i]->cpu_data(), top_data);
      }
      break;
    case EltwiseParameter::MAX: {
      int* mask = max_idx_.data();
      const Dtype* a = bottom[0]->cpu_data();
      const Dtype* b = bottom[1]->cpu_data();
      // Ties go to the later bottom, as in Caffe.
      for (int j = 0; j < count; ++j) {
        const bool first = a[j] > b[j];
        top_data[j] = first ? a[j] : b[j];
        mask[j] = first ? 0 : 1;
      }
      for (std::size_t i = 2; i < bottom.size(); ++i) {
        const Dtype* c = bottom[i]->cpu_data();
        const int index = static_cast<int>(i);
        for (int j = 0; j < count; ++j) {
          if (c[j] > top_data[j]) {
            top_data[j] = c[j];
            mask[j] = index;
          }
        }
      }
      break;
    }
    default:
      DOPPIO_FAIL() << this->Describe() << ": unknown eltwise_param.operation " << op_;
  }
}

template <typename Dtype>
void EltwiseLayer<Dtype>::Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                                       const BlobVec& bottom) {
  const int count = top[0]->count();
  if (count == 0) return;
  const Dtype* top_diff = top[0]->cpu_diff();
  // In place, bottom 0's diff is the top diff, which the other bottoms' gradients still read:
  // it is written last.
  for (int i = static_cast<int>(bottom.size()) - 1; i >= 0; --i) {
    if (!propagate_down[i]) continue;
    Dtype* diff = bottom[i]->mutable_cpu_diff();
    switch (op_) {
      case EltwiseParameter::PROD:
        DOPPIO_ENSURE(bottom[0] != top[0])
            << this->Describe() << ": operation PROD in place has overwritten bottom 0, which "
            << "the gradient needs; give the top a blob of its own";
        if (stable_prod_grad_) {
          // The product of the other bottoms, which stays right when bottom[i] holds zeros.
          bool first = true;
          for (int j = 0; j < static_cast<int>(bottom.size()); ++j) {
            if (j == i) continue;
            if (first) {
              cpu_copy(count, bottom[j]->cpu_data(), diff);
              first = false;
            } else {
              cpu_mul(count, bottom[j]->cpu_data(), diff, diff);
            }
          }
        } else {
          cpu_div(count, top[0]->cpu_data(), bottom[i]->cpu_data(), diff);
        }
        cpu_mul(count, diff, top_diff, diff);
        break;
      case EltwiseParameter::SUM:
        if (coeffs_[i] == Dtype(1)) {
          cpu_copy(count, top_diff, diff);
        } else {
          cpu_scale(count, coeffs_[i], top_diff, diff);
        }
        break;
      case EltwiseParameter::MAX: {
        const int* mask = max_idx_.data();
        for (int j = 0; j < count; ++j) diff[j] = mask[j] == i ? top_diff[j] : Dtype(0);
        break;
      }
      default:
        DOPPIO_FAIL() << this->Describe() << ": unknown eltwise_param.operation " << op_;
    }
  }
}

DOPPIO_INSTANTIATE_CLASS(EltwiseLayer);
REGISTER_LAYER_CLASS(Eltwise);

}  // namespace doppio
