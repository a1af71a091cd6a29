#include "doppio/layers/prelu_layer.hpp"

#include <memory>

#include "doppio/core/filler.hpp"
#include "doppio/core/layer_registry.hpp"

namespace doppio {

template <typename Dtype>
void PReLULayer<Dtype>::LayerSetUp(const BlobVec& bottom, const BlobVec& top) {
  const PReLUParameter& param = this->layer_param_.prelu_param();
  DOPPIO_ENSURE(bottom[0]->num_axes() >= 2)
      << this->Describe() << " needs a bottom with at least 2 axes (channels on axis 1), got "
      << bottom[0]->shape_string();
  channel_shared_ = param.channel_shared();
  channels_ = bottom[0]->shape(1);
  const int num_slopes = channel_shared_ ? 1 : channels_;
  if (this->blobs_.empty()) {
    // Caffe stores the shared slope as a 0-d blob; keep that shape so weights interchange.
    const std::vector<int> shape =
        channel_shared_ ? std::vector<int>{} : std::vector<int>{channels_};
    this->blobs_.push_back(std::make_shared<Blob<Dtype>>(shape));
    FillerParameter filler;
    if (param.has_filler()) {
      filler = param.filler();
    } else {
      filler.set_type("constant");
      filler.set_value(0.25f);
    }
    try {
      GetFiller<Dtype>(filler)->Fill(this->blobs_[0].get(), this->rng());
    } catch (const Error& e) {
      DOPPIO_FAIL() << this->Describe() << ": prelu_param.filler: " << e.what();
    }
  } else {
    DOPPIO_ENSURE(this->blobs_.size() == 1 && this->blobs_[0]->count() == num_slopes)
        << this->Describe() << ": the given slope blob has shape "
        << this->blobs_[0]->shape_string()
        << " but prelu_param.channel_shared=" << (channel_shared_ ? "true" : "false") << " with "
        << channels_ << " channel(s) needs " << num_slopes << " slope(s)";
  }
  this->param_propagate_down_.resize(this->blobs_.size(), true);
}

template <typename Dtype>
void PReLULayer<Dtype>::Reshape(const BlobVec& bottom, const BlobVec& top) {
  DOPPIO_ENSURE(bottom[0]->num_axes() >= 2)
      << this->Describe() << " needs a bottom with at least 2 axes (channels on axis 1), got "
      << bottom[0]->shape_string();
  // One slope per channel fixes the channel count; a shared slope fits any.
  if (channel_shared_) {
    channels_ = bottom[0]->shape(1);
  } else {
    DOPPIO_ENSURE(bottom[0]->shape(1) == channels_)
        << this->Describe() << " has " << channels_
        << " per-channel slope(s); cannot take a bottom of shape " << bottom[0]->shape_string();
  }
  NeuronLayer<Dtype>::Reshape(bottom, top);
}

template <typename Dtype>
void PReLULayer<Dtype>::Forward_cpu(const BlobVec& bottom, const BlobVec& top) {
  // The output loses the input wherever a slope is 0, and both gradients need it.
  this->KeepInputIfInPlace(*bottom[0], *top[0]);
  const int outer = bottom[0]->shape(0);
  const int channels = channels_;
  const int dim = bottom[0]->count(2);
  const Dtype* x = bottom[0]->cpu_data();
  Dtype* y = top[0]->mutable_cpu_data();
  const Dtype* slope = this->blobs_[0]->cpu_data();
  for (int n = 0; n < outer; ++n) {
    for (int c = 0; c < channels; ++c) {
      const Dtype a = slope[channel_shared_ ? 0 : c];
      const int offset = (n * channels + c) * dim;
      for (int i = offset; i < offset + dim; ++i) y[i] = x[i] > Dtype(0) ? x[i] : a * x[i];
    }
  }
}

template <typename Dtype>
void PReLULayer<Dtype>::Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                                     const BlobVec& bottom) {
  const int outer = bottom[0]->shape(0);
  const int channels = channels_;
  const int dim = bottom[0]->count(2);
  const Dtype* x = this->ForwardInput(*bottom[0]);
  const Dtype* dy = top[0]->cpu_diff();
  // The slope gradient reads the top diff, which in place is the bottom diff written below,
  // so it comes first.
  if (this->param_propagate_down(0)) {
    Dtype* slope_diff = this->blobs_[0]->mutable_cpu_diff();
    for (int n = 0; n < outer; ++n) {
      for (int c = 0; c < channels; ++c) {
        const int offset = (n * channels + c) * dim;
        Dtype sum = 0;
        for (int i = offset; i < offset + dim; ++i) {
          if (x[i] <= Dtype(0)) sum += dy[i] * x[i];
        }
        slope_diff[channel_shared_ ? 0 : c] += sum;
      }
    }
  }
  if (propagate_down[0]) {
    const Dtype* slope = this->blobs_[0]->cpu_data();
    Dtype* dx = bottom[0]->mutable_cpu_diff();
    for (int n = 0; n < outer; ++n) {
      for (int c = 0; c < channels; ++c) {
        const Dtype a = slope[channel_shared_ ? 0 : c];
        const int offset = (n * channels + c) * dim;
        for (int i = offset; i < offset + dim; ++i) dx[i] = x[i] > Dtype(0) ? dy[i] : a * dy[i];
      }
    }
  }
}

DOPPIO_INSTANTIATE_CLASS(PReLULayer);
REGISTER_LAYER_CLASS(PReLU);

}  // namespace doppio
