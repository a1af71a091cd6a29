#include "doppio/layers/relu_layer.hpp"

#include "doppio/core/layer_registry.hpp"
#include "doppio/util/thread_pool.hpp"

namespace doppio {

namespace {
// Elements per thread below which splitting costs more than it saves (a wake-up is a few
// microseconds; ReLU runs about a billion elements a second).
constexpr int kGrain = 1 << 15;
}  // namespace

template <typename Dtype>
void ReLULayer<Dtype>::LayerSetUp(const BlobVec& bottom, const BlobVec& top) {
  negative_slope_ = this->layer_param_.relu_param().negative_slope();
}

template <typename Dtype>
void ReLULayer<Dtype>::Forward_cpu(const BlobVec& bottom, const BlobVec& top) {
  // With a non-negative slope the output has the input's sign, so Backward can read it from
  // the output in place; a negative slope flips it, and the input must be kept.
  if (negative_slope_ < 0) this->KeepInputIfInPlace(*bottom[0], *top[0]);
  const int count = bottom[0]->count();
  const Dtype* x = bottom[0]->cpu_data();
  Dtype* y = top[0]->mutable_cpu_data();
  const Dtype slope = negative_slope_;
  ParallelFor(count, kGrain, [&](int begin, int end, int) {
    for (int i = begin; i < end; ++i) y[i] = ReLUValue(x[i], slope);
  });
}

template <typename Dtype>
void ReLULayer<Dtype>::Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                                    const BlobVec& bottom) {
  if (!propagate_down[0]) return;
  const int count = bottom[0]->count();
  const Dtype* x = this->ForwardInput(*bottom[0]);
  const Dtype* dy = top[0]->cpu_diff();
  Dtype* dx = bottom[0]->mutable_cpu_diff();
  const Dtype slope = negative_slope_;
  ParallelFor(count, kGrain, [&](int begin, int end, int) {
    for (int i = begin; i < end; ++i) dx[i] = x[i] > Dtype(0) ? dy[i] : slope * dy[i];
  });
}

DOPPIO_INSTANTIATE_CLASS(ReLULayer);
REGISTER_LAYER_CLASS(ReLU);

}  // namespace doppio
