#include "doppio/layers/filter_layer.hpp"

#include "doppio/core/layer_registry.hpp"
#include "doppio/util/math_functions.hpp"

namespace doppio {

template <typename Dtype>
void FilterLayer<Dtype>::LayerSetUp(const BlobVec& bottom, const BlobVec& top) {
  DOPPIO_ENSURE(top.size() + 1 == bottom.size())
      << this->Describe() << " needs one top per bottom it filters (all bottoms but the last, "
      << "the selector): got " << bottom.size() << " bottoms and " << top.size() << " tops";
  first_reshape_ = true;
}

template <typename Dtype>
void FilterLayer<Dtype>::Reshape(const BlobVec& bottom, const BlobVec& top) {
  const Blob<Dtype>& selector = *bottom.back();
  DOPPIO_ENSURE(selector.num_axes() >= 1 && selector.count() == selector.shape(0))
      << this->Describe() << ": the selector (last bottom) must be (N) or (N, 1, ...), got "
      << selector.shape_string();
  const int num = selector.shape(0);
  for (std::size_t i = 0; i + 1 < bottom.size(); ++i) {
    DOPPIO_ENSURE(bottom[i]->num_axes() >= 1 && bottom[i]->shape(0) == num)
        << this->Describe() << ": bottom " << i << " has shape " << bottom[i]->shape_string()
        << " but the selector has " << num << " items; each bottom needs as many";
  }
  const Dtype* select = selector.cpu_data();
  kept_.clear();
  for (int n = 0; n < num; ++n) {
    if (select[n] != Dtype(0)) kept_.push_back(n);
  }
  // At set-up the selector holds no data yet: size the tops for every item, as Caffe does.
  const int kept = first_reshape_ ? num : static_cast<int>(kept_.size());
  first_reshape_ = false;
  for (std::size_t t = 0; t < top.size(); ++t) {
    std::vector<int> shape = bottom[t]->shape();
    shape[0] = kept;
    top[t]->Reshape(shape);
  }
}

template <typename Dtype>
void FilterLayer<Dtype>::Forward_cpu(const BlobVec& bottom, const BlobVec& top) {
  for (std::size_t t = 0; t < top.size(); ++t) {
    const int inner = bottom[t]->count(1);
    const Dtype* in = bottom[t]->cpu_data();
    Dtype* out = top[t]->mutable_cpu_data();
    for (std::size_t k = 0; k < kept_.size(); ++k) {
      cpu_copy(inner, in + static_cast<long long>(kept_[k]) * inner, out + k * inner);
    }
  }
}

template <typename Dtype>
void FilterLayer<Dtype>::CheckSelectorNotPropagated(const std::vector<bool>& propagate_down) const {
  DOPPIO_ENSURE(!propagate_down.back())
      << this->Describe() << " cannot backpropagate to its selector (the last bottom)";
}

template <typename Dtype>
void FilterLayer<Dtype>::Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                                      const BlobVec& bottom) {
  CheckSelectorNotPropagated(propagate_down);
  for (std::size_t t = 0; t < top.size(); ++t) {
    if (!propagate_down[t]) continue;
    const int inner = bottom[t]->count(1);
    const Dtype* top_diff = top[t]->cpu_diff();
    Dtype* bottom_diff = bottom[t]->mutable_cpu_diff();
    cpu_set(bottom[t]->count(), Dtype(0), bottom_diff);
    for (std::size_t k = 0; k < kept_.size(); ++k) {
      cpu_copy(inner, top_diff + k * inner, bottom_diff + static_cast<long long>(kept_[k]) * inner);
    }
  }
}

DOPPIO_INSTANTIATE_CLASS(FilterLayer);
REGISTER_LAYER_CLASS(Filter);

}  // namespace doppio
