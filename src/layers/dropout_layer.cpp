#include "doppio/layers/dropout_layer.hpp"

#include "doppio/core/layer_registry.hpp"
#include "doppio/util/math_functions.hpp"
#include "doppio/util/philox.hpp"

namespace doppio {

namespace {
constexpr std::uint64_t kMaskStream = 0xd209;
}  // namespace

template <typename Dtype>
void DropoutLayer<Dtype>::LayerSetUp(const BlobVec& bottom, const BlobVec& top) {
  const DropoutParameter& param = this->layer_param_.dropout_param();
  const float ratio = param.dropout_ratio();
  DOPPIO_ENSURE(ratio >= 0 && ratio < 1)
      << this->Describe() << ": dropout_param.dropout_ratio must be in [0, 1), got " << ratio;
  ratio_ = ratio;
  scale_train_ = param.scale_train();
  train_scale_ = scale_train_ ? Dtype(1) / (Dtype(1) - ratio_) : Dtype(1);
  test_scale_ = scale_train_ ? Dtype(1) : Dtype(1) - ratio_;
}

template <typename Dtype>
std::uint64_t DropoutLayer<Dtype>::MaskSeed() const {
  return DeriveSeed(this->seed(), kMaskStream);
}

template <typename Dtype>
void DropoutLayer<Dtype>::Reshape(const BlobVec& bottom, const BlobVec& top) {
  NeuronLayer<Dtype>::Reshape(bottom, top);
  mask_.resize(bottom[0]->count());
}

template <typename Dtype>
void DropoutLayer<Dtype>::Forward_cpu(const BlobVec& bottom, const BlobVec& top) {
  const int count = bottom[0]->count();
  const Dtype* x = bottom[0]->cpu_data();
  Dtype* y = top[0]->mutable_cpu_data();
  if (this->phase_ == TRAIN) {
    unsigned int* mask = mask_.data();
    const int num = bottom[0]->num_axes() > 0 ? bottom[0]->shape(0) : 1;
    const std::uint64_t first = this->FirstSamplePosition(num), seed = MaskSeed();
    const std::uint64_t keep = BernoulliThreshold(1.0 - static_cast<double>(ratio_));
    const int per_sample = num > 0 ? count / num : 0;
    for (int n = 0; n < num; ++n) {
      unsigned int* sample = mask + static_cast<std::size_t>(n) * per_sample;
      for (int u = 0; u < per_sample; u += 4) {
        const PhiloxWords words = SampleWords(seed, first + n, static_cast<std::uint64_t>(u / 4));
        for (int j = 0; j < 4 && u + j < per_sample; ++j) sample[u + j] = words.v[j] < keep;
      }
    }
    const Dtype scale = train_scale_;
    for (int i = 0; i < count; ++i) y[i] = mask[i] ? x[i] * scale : Dtype(0);
  } else if (test_scale_ != Dtype(1)) {
    cpu_scale(count, test_scale_, x, y);
  } else if (x != y) {
    cpu_copy(count, x, y);
  }
}

template <typename Dtype>
void DropoutLayer<Dtype>::Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                                       const BlobVec& bottom) {
  if (!propagate_down[0]) return;
  const int count = bottom[0]->count();
  const Dtype* dy = top[0]->cpu_diff();
  Dtype* dx = bottom[0]->mutable_cpu_diff();
  if (this->phase_ == TRAIN) {
    const unsigned int* mask = mask_.data();
    const Dtype scale = train_scale_;
    for (int i = 0; i < count; ++i) dx[i] = mask[i] ? dy[i] * scale : Dtype(0);
  } else if (test_scale_ != Dtype(1)) {
    cpu_scale(count, test_scale_, dy, dx);
  } else if (dy != dx) {
    cpu_copy(count, dy, dx);
  }
}

DOPPIO_INSTANTIATE_CLASS(DropoutLayer);
REGISTER_LAYER_CLASS(Dropout);

}  // namespace doppio
