#include "doppio/layers/clip_layer.hpp"

#include <algorithm>

#include "doppio/core/layer_registry.hpp"

namespace doppio {

template <typename Dtype>
void ClipLayer<Dtype>::LayerSetUp(const BlobVec& bottom, const BlobVec& top) {
  const ClipParameter& param = this->layer_param_.clip_param();
  // Caffe declares both bounds required.
  DOPPIO_ENSURE(param.has_min() && param.has_max())
      << this->Describe() << ": clip_param needs both min and max (missing "
      << (param.has_min() ? "max" : "min") << ")";
  DOPPIO_ENSURE(param.min() <= param.max())
      << this->Describe() << ": clip_param.min (" << param.min()
      << ") is greater than clip_param.max (" << param.max() << ")";
  min_ = param.min();
  max_ = param.max();
}

template <typename Dtype>
void ClipLayer<Dtype>::Forward_cpu(const BlobVec& bottom, const BlobVec& top) {
  // In place the output would hide where the input lay outside [min, max].
  this->KeepInputIfInPlace(*bottom[0], *top[0]);
  const int count = bottom[0]->count();
  const Dtype* x = bottom[0]->cpu_data();
  Dtype* y = top[0]->mutable_cpu_data();
  for (int i = 0; i < count; ++i) y[i] = std::max(min_, std::min(x[i], max_));
}

template <typename Dtype>
void ClipLayer<Dtype>::Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                                    const BlobVec& bottom) {
  if (!propagate_down[0]) return;
  const int count = bottom[0]->count();
  const Dtype* x = this->ForwardInput(*bottom[0]);
  const Dtype* dy = top[0]->cpu_diff();
  Dtype* dx = bottom[0]->mutable_cpu_diff();
  for (int i = 0; i < count; ++i) dx[i] = x[i] >= min_ && x[i] <= max_ ? dy[i] : Dtype(0);
}

DOPPIO_INSTANTIATE_CLASS(ClipLayer);
REGISTER_LAYER_CLASS(Clip);

}  // namespace doppio
