#include "doppio/layers/batch_norm_layer.hpp"

#include <algorithm>
#include <cmath>

#include "doppio/core/layer_registry.hpp"
#include "doppio/util/math_functions.hpp"

namespace doppio {

template <typename Dtype>
void BatchNormLayer<Dtype>::LayerSetUp(const BlobVec& bottom, const BlobVec& top) {
  const BatchNormParameter& param = this->layer_param_.batch_norm_param();
  moving_average_fraction_ = param.moving_average_fraction();
  use_global_stats_ =
      param.has_use_global_stats() ? param.use_global_stats() : this->phase_ == TEST;
  eps_ = param.eps();
  DOPPIO_ENSURE(eps_ > 0) << this->Describe() << ": batch_norm_param.eps must be positive, got "
                          << param.eps();
  DOPPIO_ENSURE(bottom[0]->num_axes() >= 1)
      << this->Describe() << ": the input needs at least one axis, got "
      << bottom[0]->shape_string();
  channels_ = bottom[0]->num_axes() == 1 ? 1 : bottom[0]->shape(1);
  if (this->blobs_.empty()) {
    this->blobs_.push_back(std::make_shared<Blob<Dtype>>(std::vector<int>{channels_}));
    this->blobs_.push_back(std::make_shared<Blob<Dtype>>(std::vector<int>{channels_}));
    this->blobs_.push_back(std::make_shared<Blob<Dtype>>(std::vector<int>{1}));
    for (auto& blob : this->blobs_) cpu_set(blob->count(), Dtype(0), blob->mutable_cpu_data());
  } else {
    DOPPIO_ENSURE(this->blobs_.size() == 3 && this->blobs_[0]->count() == channels_ &&
                  this->blobs_[1]->count() == channels_ && this->blobs_[2]->count() == 1)
        << this->Describe() << ": expected 3 stored blobs (mean and variance of " << channels_
        << " channels, and a scale factor of 1 value), got " << this->blobs_.size()
        << " blob(s) that do not match";
  }
  // The statistics are updated here, never by the solver: no gradients, and lr_mult 0.
  this->param_propagate_down_.assign(this->blobs_.size(), false);
  for (int i = 0; i < static_cast<int>(this->blobs_.size()); ++i) {
    if (this->layer_param_.param_size() <= i) {
      this->layer_param_.add_param()->set_lr_mult(0.f);
    } else {
      DOPPIO_ENSURE(this->layer_param_.param(i).lr_mult() == 0.f)
          << this->Describe() << ": param[" << i << "].lr_mult is "
          << this->layer_param_.param(i).lr_mult()
          << "; the batch statistics are not learned parameters, so lr_mult must be 0";
    }
  }
}

template <typename Dtype>
void BatchNormLayer<Dtype>::Reshape(const BlobVec& bottom, const BlobVec& top) {
  const int channels = bottom[0]->num_axes() == 1 ? 1 : bottom[0]->shape(1);
  DOPPIO_ENSURE(channels == channels_)
      << this->Describe() << ": the input " << bottom[0]->shape_string() << " has " << channels
      << " channel(s), but the layer was set up for " << channels_;
  top[0]->ReshapeLike(*bottom[0]);
  if (!use_global_stats_) x_norm_.ReshapeLike(*bottom[0]);
  num_ = bottom[0]->shape(0);
  spatial_dim_ = num_ * channels_ == 0 ? 0 : bottom[0]->count() / (num_ * channels_);
  mean_.resize(channels_);
  inv_std_.resize(channels_);
  sum_dy_.resize(channels_);
  sum_dy_xnorm_.resize(channels_);
}

template <typename Dtype>
void BatchNormLayer<Dtype>::Forward_cpu(const BlobVec& bottom, const BlobVec& top) {
  const Dtype* x = bottom[0]->cpu_data();
  Dtype* y = top[0]->mutable_cpu_data();
  const int C = channels_;
  const int S = spatial_dim_;
  const int m = num_ * S;  // values per channel
  std::vector<Dtype>& var = inv_std_;
  if (use_global_stats_) {
    const Dtype stored = this->blobs_[2]->cpu_data()[0];
    const Dtype factor = stored == 0 ? Dtype(0) : Dtype(1) / stored;
    const Dtype* mean_sum = this->blobs_[0]->cpu_data();
    const Dtype* var_sum = this->blobs_[1]->cpu_data();
    for (int c = 0; c < C; ++c) {
      mean_[c] = factor * mean_sum[c];
      var[c] = factor * var_sum[c];
    }
  } else {
    // Two passes (mean, then the mean of squared deviations) for accuracy.
    std::fill(mean_.begin(), mean_.end(), Dtype(0));
    for (int n = 0; n < num_; ++n) {
      for (int c = 0; c < C; ++c) {
        const Dtype* xc = x + (n * C + c) * S;
        Dtype sum = 0;
        for (int s = 0; s < S; ++s) sum += xc[s];
        mean_[c] += sum;
      }
    }
    const Dtype inv_m = m == 0 ? Dtype(0) : Dtype(1) / Dtype(m);
    for (int c = 0; c < C; ++c) mean_[c] *= inv_m;
    std::fill(var.begin(), var.end(), Dtype(0));
    for (int n = 0; n < num_; ++n) {
      for (int c = 0; c < C; ++c) {
        const Dtype* xc = x + (n * C + c) * S;
        const Dtype mu = mean_[c];
        Dtype sum = 0;
        for (int s = 0; s < S; ++s) sum += (xc[s] - mu) * (xc[s] - mu);
        var[c] += sum;
      }
    }
    for (int c = 0; c < C; ++c) var[c] *= inv_m;
    // Running sums: s <- maf * s + 1, mean_sum <- maf * mean_sum + mean, and the same for
    // the variance with the unbiased correction m / (m - 1).
    const Dtype maf = moving_average_fraction_;
    Dtype* factor = this->blobs_[2]->mutable_cpu_data();
    factor[0] = factor[0] * maf + Dtype(1);
    const Dtype correction = m > 1 ? Dtype(m) / Dtype(m - 1) : Dtype(1);
    Dtype* mean_sum = this->blobs_[0]->mutable_cpu_data();
    Dtype* var_sum = this->blobs_[1]->mutable_cpu_data();
    for (int c = 0; c < C; ++c) {
      mean_sum[c] = maf * mean_sum[c] + mean_[c];
      var_sum[c] = maf * var_sum[c] + correction * var[c];
    }
  }
  for (int c = 0; c < C; ++c) inv_std_[c] = Dtype(1) / std::sqrt(var[c] + eps_);
  // Backward with batch statistics needs the normalized values; top may be overwritten by
  // then (in-place successors), so they are kept in x_norm_.
  Dtype* x_norm = use_global_stats_ ? nullptr : x_norm_.mutable_cpu_data();
  for (int n = 0; n < num_; ++n) {
    for (int c = 0; c < C; ++c) {
      const int base = (n * C + c) * S;
      const Dtype mu = mean_[c];
      const Dtype inv = inv_std_[c];
      // Reads x before writing y at the same index, so in-place computation is fine.
      if (x_norm) {
        for (int s = 0; s < S; ++s) {
          const Dtype v = (x[base + s] - mu) * inv;
          x_norm[base + s] = v;
          y[base + s] = v;
        }
      } else {
        for (int s = 0; s < S; ++s) y[base + s] = (x[base + s] - mu) * inv;
      }
    }
  }
}

template <typename Dtype>
void BatchNormLayer<Dtype>::Backward_cpu(const BlobVec& top,
                                         const std::vector<bool>& propagate_down,
                                         const BlobVec& bottom) {
  if (!propagate_down[0]) return;
  const Dtype* dy = top[0]->cpu_diff();
  Dtype* dx = bottom[0]->mutable_cpu_diff();
  const int C = channels_;
  const int S = spatial_dim_;
  if (use_global_stats_) {
    // The statistics are constants here, so the layer is an affine map per channel.
    for (int n = 0; n < num_; ++n) {
      for (int c = 0; c < C; ++c) {
        const int base = (n * C + c) * S;
        const Dtype inv = inv_std_[c];
        for (int s = 0; s < S; ++s) dx[base + s] = dy[base + s] * inv;
      }
    }
    return;
  }
  // dx = (dy - mean(dy) - mean(dy * x_norm) * x_norm) / sqrt(var + eps), the means taken
  // per channel over batch and space. The sums are complete before any dx is written, so
  // dx may alias dy (in-place).
  const Dtype* x_norm = x_norm_.cpu_data();
  std::fill(sum_dy_.begin(), sum_dy_.end(), Dtype(0));
  std::fill(sum_dy_xnorm_.begin(), sum_dy_xnorm_.end(), Dtype(0));
  for (int n = 0; n < num_; ++n) {
    for (int c = 0; c < C; ++c) {
      const int base = (n * C + c) * S;
      Dtype a = 0;
      Dtype b = 0;
      for (int s = 0; s < S; ++s) {
        a += dy[base + s];
        b += dy[base + s] * x_norm[base + s];
      }
      sum_dy_[c] += a;
      sum_dy_xnorm_[c] += b;
    }
  }
  const int m = num_ * S;
  const Dtype inv_m = m == 0 ? Dtype(0) : Dtype(1) / Dtype(m);
  for (int n = 0; n < num_; ++n) {
    for (int c = 0; c < C; ++c) {
      const int base = (n * C + c) * S;
      const Dtype mean_dy = sum_dy_[c] * inv_m;
      const Dtype mean_dy_xnorm = sum_dy_xnorm_[c] * inv_m;
      const Dtype inv = inv_std_[c];
      for (int s = 0; s < S; ++s) {
        dx[base + s] = (dy[base + s] - mean_dy - mean_dy_xnorm * x_norm[base + s]) * inv;
      }
    }
  }
}

DOPPIO_INSTANTIATE_CLASS(BatchNormLayer);
// Running statistics are each rank's own, as in Caffe's multi-GPU training.
REGISTER_LAYER_CLASS_WITH_TRAITS(BatchNorm, LayerTraits().PerRankState().Normalization());

}  // namespace doppio
