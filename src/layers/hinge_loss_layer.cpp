#include "doppio/layers/hinge_loss_layer.hpp"

#include <algorithm>

#include "doppio/core/layer_registry.hpp"
#include "doppio/util/math_functions.hpp"
#include "doppio/util/nonfinite.hpp"

namespace doppio {

template <typename Dtype>
void HingeLossLayer<Dtype>::Reshape(const BlobVec& bottom, const BlobVec& top) {
  LossLayer<Dtype>::Reshape(bottom, top);
  DOPPIO_ENSURE(bottom[1]->count() == bottom[0]->shape(0))
      << this->Describe() << ": expected one label per sample (" << bottom[0]->shape(0)
      << "), got labels of shape " << bottom[1]->shape_string();
  margin_.ReshapeLike(*bottom[0]);
}

template <typename Dtype>
void HingeLossLayer<Dtype>::Forward_cpu(const BlobVec& bottom, const BlobVec& top) {
  const int num = bottom[0]->shape(0);
  const int count = bottom[0]->count();
  const int dim = num == 0 ? 0 : count / num;
  const Dtype* x = bottom[0]->cpu_data();
  const Dtype* labels = bottom[1]->cpu_data();
  Dtype* margin = margin_.mutable_cpu_data();
  for (int n = 0; n < num; ++n) {
    const int label = static_cast<int>(labels[n]);
    DOPPIO_ENSURE(label >= 0 && label < dim)
        << this->Describe() << ": label value " << label << " (sample " << n
        << ") is outside the class range [0, " << dim << ")";
    for (int k = 0; k < dim; ++k) {
      const Dtype t = k == label ? Dtype(1) : Dtype(-1);
      margin[n * dim + k] = MaxKeepingNaN(Dtype(1) - t * x[n * dim + k], Dtype(0));
    }
  }
  Dtype loss = 0;
  switch (this->layer_param_.hinge_loss_param().norm()) {
    case HingeLossParameter::L1:
      loss = cpu_asum(count, margin);
      break;
    case HingeLossParameter::L2:
      loss = cpu_dot(count, margin, margin);
      break;
  }
  top[0]->mutable_cpu_data()[0] = loss / Dtype(std::max(num, 1));
}

template <typename Dtype>
void HingeLossLayer<Dtype>::Backward_cpu(const BlobVec& top,
                                         const std::vector<bool>& propagate_down,
                                         const BlobVec& bottom) {
  this->RejectLabelGradient(propagate_down, 1);
  if (!propagate_down[0]) return;
  const int num = bottom[0]->shape(0);
  const int count = bottom[0]->count();
  const int dim = num == 0 ? 0 : count / num;
  const Dtype* labels = bottom[1]->cpu_data();
  const Dtype* margin = margin_.cpu_data();
  Dtype* dx = bottom[0]->mutable_cpu_diff();
  const Dtype scale = top[0]->cpu_diff()[0] / Dtype(std::max(num, 1));
  const bool l2 = this->layer_param_.hinge_loss_param().norm() == HingeLossParameter::L2;
  // d/dx max(0, 1 - t x) = -t where the margin is active; L2 adds the factor 2 * margin.
  for (int n = 0; n < num; ++n) {
    const int label = static_cast<int>(labels[n]);
    for (int k = 0; k < dim; ++k) {
      const int idx = n * dim + k;
      const Dtype t = k == label ? Dtype(1) : Dtype(-1);
      const Dtype m = margin[idx];
      const Dtype active = m > 0 ? Dtype(1) : Dtype(0);
      dx[idx] = -t * scale * (l2 ? Dtype(2) * m : active);
    }
  }
}

DOPPIO_INSTANTIATE_CLASS(HingeLossLayer);
REGISTER_LAYER_CLASS(HingeLoss);

}  // namespace doppio
