#include "doppio/layers/threshold_layer.hpp"

#include "doppio/core/layer_registry.hpp"

namespace doppio {

template <typename Dtype>
void ThresholdLayer<Dtype>::LayerSetUp(const BlobVec& bottom, const BlobVec& top) {
  threshold_ = this->layer_param_.threshold_param().threshold();
}

template <typename Dtype>
void ThresholdLayer<Dtype>::Forward_cpu(const BlobVec& bottom, const BlobVec& top) {
  const int count = bottom[0]->count();
  const Dtype* x = bottom[0]->cpu_data();
  Dtype* y = top[0]->mutable_cpu_data();
  const Dtype threshold = threshold_;
  for (int i = 0; i < count; ++i) y[i] = x[i] > threshold ? Dtype(1) : Dtype(0);
}

template <typename Dtype>
void ThresholdLayer<Dtype>::Backward_cpu(const BlobVec& top,
                                         const std::vector<bool>& propagate_down,
                                         const BlobVec& bottom) {
  // A step function has no useful gradient; a net that needs one is misconfigured.
  DOPPIO_ENSURE(!propagate_down[0])
      << this->Describe()
      << " has no gradient; set propagate_down: false or keep it off the backward path";
}

DOPPIO_INSTANTIATE_CLASS(ThresholdLayer);
REGISTER_LAYER_CLASS(Threshold);

}  // namespace doppio
