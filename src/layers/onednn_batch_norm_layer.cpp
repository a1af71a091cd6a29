#include "doppio/layers/onednn_batch_norm_layer.hpp"

#ifdef DOPPIO_WITH_ONEDNN

#include <algorithm>
#include <cmath>

#include "doppio/core/layer_registry.hpp"
#include "doppio/util/math_functions.hpp"

namespace doppio {

namespace {
using dnnl::normalization_flags;
}  // namespace

void OnednnBatchNormLayer::Reshape(const BlobVec& bottom, const BlobVec& top) {
  BatchNormLayer<float>::Reshape(bottom, top);
  if (bottom[0]->shape() == prepared_shape_ || bottom[0]->count() == 0) return;
  UseOnednnThreads();
  OnednnCall(this->Describe(), "batch normalization", [&] { Prepare(); });
  prepared_shape_ = bottom[0]->shape();
}

void OnednnBatchNormLayer::Prepare() {
  // Caffe normalises axis 1 over every other axis: (N, C, the rest, 1) covers any shape.
  const auto data = OnednnPlainDesc({num_, channels_, spatial_dim_, 1});
  const auto stats = OnednnPlainDesc({channels_});
  const auto forward_flags =
      use_global_stats_ ? normalization_flags::use_global_stats : normalization_flags::none;
  const auto backward_flags =
      use_global_stats_ ? normalization_flags::use_global_stats : normalization_flags::use_scale;
  forward_ = dnnl::batch_normalization_forward(dnnl::batch_normalization_forward::primitive_desc(
      dnnl::batch_normalization_forward::desc(dnnl::prop_kind::forward_training, data, eps_,
                                              forward_flags),
      engine_));
  // The backward primitive's hint: a forward one with the flags Backward runs with.
  const dnnl::batch_normalization_forward::primitive_desc hint(
      dnnl::batch_normalization_forward::desc(dnnl::prop_kind::forward_training, data, eps_,
                                              backward_flags),
      engine_);
  // oneDNN 2.6 reads a scale only in the backward pass that also gives its gradient (unused).
  const auto backward_kind =
      use_global_stats_ ? dnnl::prop_kind::backward_data : dnnl::prop_kind::backward;
  backward_ = dnnl::batch_normalization_backward(dnnl::batch_normalization_backward::primitive_desc(
      dnnl::batch_normalization_backward::desc(backward_kind, data, data, eps_, backward_flags),
      engine_, hint));
  for (dnnl::memory* memory : {&src_, &dst_, &diff_dst_, &diff_src_}) {
    *memory = dnnl::memory(data, engine_, DNNL_MEMORY_NONE);
  }
  for (dnnl::memory* memory :
       {&mean_memory_, &variance_memory_, &zero_mean_, &unit_variance_, &scale_, &diff_scale_}) {
    *memory = dnnl::memory(stats, engine_);
  }
  std::fill_n(Values(zero_mean_), channels_, 0.f);
  // oneDNN divides by sqrt(variance + eps): 1 - eps makes that 1 (to a rounding).
  std::fill_n(Values(unit_variance_), channels_, 1.f - eps_);
}

void OnednnBatchNormLayer::Forward_cpu(const BlobVec& bottom, const BlobVec& top) {
  if (bottom[0]->count() == 0) {
    BatchNormLayer<float>::Forward_cpu(bottom, top);
    return;
  }
  float* mean = Values(mean_memory_);
  float* variance = Values(variance_memory_);
  if (use_global_stats_) {
    const float stored = this->blobs_[2]->cpu_data()[0];
    const float factor = stored == 0 ? 0.f : 1.f / stored;
    const float* mean_sum = this->blobs_[0]->cpu_data();
    const float* variance_sum = this->blobs_[1]->cpu_data();
    for (int c = 0; c < channels_; ++c) {
      mean[c] = factor * mean_sum[c];
      variance[c] = factor * variance_sum[c];
    }
  }
  UseOnednnThreads();
  OnednnCall(this->Describe(), "batch normalization forward", [&] {
    src_.set_data_handle(const_cast<float*>(bottom[0]->cpu_data()));
    dst_.set_data_handle(top[0]->mutable_cpu_data());
    forward_.execute(stream_, {{DNNL_ARG_SRC, src_},
                               {DNNL_ARG_DST, dst_},
                               {DNNL_ARG_MEAN, mean_memory_},
                               {DNNL_ARG_VARIANCE, variance_memory_}});
    stream_.wait();
  });
  if (use_global_stats_) return;
  // Running sums, as the CAFFE engine keeps them: s <- maf * s + 1, mean_sum <- maf * mean_sum
  // + mean, and the variance's with the unbiased correction m / (m - 1) (oneDNN's is biased).
  const int m = num_ * spatial_dim_;
  const float maf = moving_average_fraction_;
  float* factor = this->blobs_[2]->mutable_cpu_data();
  factor[0] = factor[0] * maf + 1.f;
  const float correction = m > 1 ? float(m) / float(m - 1) : 1.f;
  float* mean_sum = this->blobs_[0]->mutable_cpu_data();
  float* variance_sum = this->blobs_[1]->mutable_cpu_data();
  float* scale = Values(scale_);
  for (int c = 0; c < channels_; ++c) {
    mean_sum[c] = maf * mean_sum[c] + mean[c];
    variance_sum[c] = maf * variance_sum[c] + correction * variance[c];
    scale[c] = 1.f / std::sqrt(variance[c] + eps_);
  }
  cpu_copy(top[0]->count(), top[0]->cpu_data(), x_norm_.mutable_cpu_data());
}

void OnednnBatchNormLayer::Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                                        const BlobVec& bottom) {
  if (!propagate_down[0]) return;
  if (bottom[0]->count() == 0) {
    BatchNormLayer<float>::Backward_cpu(top, propagate_down, bottom);
    return;
  }
  UseOnednnThreads();
  OnednnCall(this->Describe(), "batch normalization backward", [&] {
    diff_dst_.set_data_handle(const_cast<float*>(top[0]->cpu_diff()));
    diff_src_.set_data_handle(bottom[0]->mutable_cpu_diff());
    if (use_global_stats_) {
      // An affine map per channel: oneDNN reads the statistics, not the input.
      src_.set_data_handle(const_cast<float*>(bottom[0]->cpu_data()));
      backward_.execute(stream_, {{DNNL_ARG_SRC, src_},
                                  {DNNL_ARG_DIFF_DST, diff_dst_},
                                  {DNNL_ARG_MEAN, mean_memory_},
                                  {DNNL_ARG_VARIANCE, variance_memory_},
                                  {DNNL_ARG_DIFF_SRC, diff_src_}});
    } else {
      src_.set_data_handle(const_cast<float*>(x_norm_.cpu_data()));
      backward_.execute(stream_, {{DNNL_ARG_SRC, src_},
                                  {DNNL_ARG_DIFF_DST, diff_dst_},
                                  {DNNL_ARG_MEAN, zero_mean_},
                                  {DNNL_ARG_VARIANCE, unit_variance_},
                                  {DNNL_ARG_SCALE, scale_},
                                  {DNNL_ARG_DIFF_SCALE, diff_scale_},
                                  {DNNL_ARG_DIFF_SRC, diff_src_}});
    }
    stream_.wait();
  });
}

DOPPIO_REGISTER_LAYER_ENGINE_FLOAT_IF(BatchNorm, ONEDNN, OnednnBatchNormLayer, nullptr);

}  // namespace doppio

#endif  // DOPPIO_WITH_ONEDNN
