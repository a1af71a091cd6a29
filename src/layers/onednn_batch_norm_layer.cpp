#include "doppio/layers/onednn_batch_norm_layer.hpp"

#ifdef DOPPIO_WITH_ONEDNN

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "doppio/core/layer_registry.hpp"
#include "doppio/util/half.hpp"
#include "doppio/util/math_functions.hpp"

namespace doppio {

namespace {
using dnnl::normalization_flags;

// Caffe's ReLU gradient for slope 0, in place (relu_layer.cpp: it reads the output's sign),
// over every value of three memories in one layout, floats or bf16 (mixed precision).
void ReLUGradient(const dnnl::memory& dst, const dnnl::memory& diff_dst,
                  const dnnl::memory& diff_src) {
  if (dst.get_desc().data_type() == dnnl::memory::data_type::bf16) {
    const auto* y = static_cast<const std::uint16_t*>(dst.get_data_handle());
    const auto* dy = static_cast<const std::uint16_t*>(diff_dst.get_data_handle());
    auto* dx = static_cast<std::uint16_t*>(diff_src.get_data_handle());
    const std::size_t count = dst.get_desc().get_size() / sizeof(std::uint16_t);
    for (std::size_t i = 0; i < count; ++i) {
      dx[i] = Bfloat16ToFloat(y[i]) > 0.f ? dy[i] : FloatToBfloat16(0.f * Bfloat16ToFloat(dy[i]));
    }
    return;
  }
  const auto* y = static_cast<const float*>(dst.get_data_handle());
  const auto* dy = static_cast<const float*>(diff_dst.get_data_handle());
  auto* dx = static_cast<float*>(diff_src.get_data_handle());
  const std::size_t count = dst.get_desc().get_size() / sizeof(float);
  for (std::size_t i = 0; i < count; ++i) dx[i] = y[i] > 0.f ? dy[i] : 0.f * dy[i];
}
}  // namespace

void OnednnBatchNormLayer::Reshape(const BlobVec& bottom, const BlobVec& top) {
  BatchNormLayer<float>::Reshape(bottom, top);
  if (bottom[0]->shape() == prepared_shape_ || bottom[0]->count() == 0) return;
  // A 4-d bottom keeps its (N, C, H, W): a convolution's output arrives blocked with those
  // dims, and only a layout of the same dims is read (and handed on) as it is. Caffe
  // normalises axis 1 over every other axis, so (N, C, the rest, 1) covers any other shape.
  data_dims_ = bottom[0]->num_axes() == 4
                   ? dnnl::memory::dims{bottom[0]->shape(0), bottom[0]->shape(1),
                                        bottom[0]->shape(2), bottom[0]->shape(3)}
                   : dnnl::memory::dims{num_, channels_, spatial_dim_, 1};
  Build("batch normalization", [&] { Prepare(); });
  prepared_shape_ = bottom[0]->shape();
}

void OnednnBatchNormLayer::FuseScale(Layer<float>* scale, bool relu) {
  scale_layer_ = scale;
  fused_relu_ = relu;
  if (prepared_shape_.empty()) return;  // Reshape prepares it when the bottom has values
  Build("batch normalization with scale and shift", [&] { Prepare(); });
}

void OnednnBatchNormLayer::Prepare() {
  const auto data = OnednnPlainDesc(data_dims_);
  const auto stats = OnednnPlainDesc({channels_});
  if (fused()) {
    PrepareFused(data, stats);
    return;
  }
  const auto forward_flags =
      use_global_stats_ ? normalization_flags::use_global_stats : normalization_flags::none;
  const auto backward_flags =
      use_global_stats_ ? normalization_flags::use_global_stats : normalization_flags::use_scale;
  forward_ = dnnl::batch_normalization_forward(dnnl::batch_normalization_forward::primitive_desc(
      dnnl::batch_normalization_forward::desc(dnnl::prop_kind::forward_training, data, eps_,
                                              forward_flags),
      engine()));
  // The backward primitive's hint: a forward one with the flags Backward runs with.
  const dnnl::batch_normalization_forward::primitive_desc hint(
      dnnl::batch_normalization_forward::desc(dnnl::prop_kind::forward_training, data, eps_,
                                              backward_flags),
      engine());
  // oneDNN 2.6 reads a scale only in the backward pass that also gives its gradient (unused).
  const auto backward_kind =
      use_global_stats_ ? dnnl::prop_kind::backward_data : dnnl::prop_kind::backward;
  backward_ = dnnl::batch_normalization_backward(dnnl::batch_normalization_backward::primitive_desc(
      dnnl::batch_normalization_backward::desc(backward_kind, data, data, eps_, backward_flags),
      engine(), hint));
  for (dnnl::memory* memory : {&src_, &dst_, &diff_dst_, &diff_src_}) {
    *memory = dnnl::memory(data, engine(), DNNL_MEMORY_NONE);
  }
  for (dnnl::memory* memory :
       {&mean_memory_, &variance_memory_, &zero_mean_, &unit_variance_, &scale_, &diff_scale_}) {
    *memory = dnnl::memory(stats, engine());
  }
  std::fill_n(Values(zero_mean_), channels_, 0.f);
  // oneDNN divides by sqrt(variance + eps): 1 - eps makes that 1 (to a rounding).
  std::fill_n(Values(unit_variance_), channels_, 1.f - eps_);
}

void OnednnBatchNormLayer::PrepareFused(const dnnl::memory::desc& data,
                                        const dnnl::memory::desc& stats) {
  auto flags = normalization_flags::use_scale;
  if (use_global_stats_) flags |= normalization_flags::use_global_stats;
  if (scale_layer_->blobs().size() > 1) flags |= normalization_flags::use_shift;
  flags_without_relu_ = flags;
  if (fused_relu_) flags |= normalization_flags::fuse_norm_relu;
  // oneDNN 2.6 has jit kernels for batch normalization on its blocked layouts only: on Caffe's
  // NCHW it runs a plain C++ one. Measured on ResNet-50's bn_conv1 shape (8x64x112x112, one
  // AVX-512 core): 24 / 25 ms forward / backward in NCHW, 3.5 / 4.6 ms in nChw16c, where one
  // reorder to or from NCHW costs 2.6 ms. So the primitive runs in the first blocked layout
  // with a jit kernel, and the activations are reordered around it.
  const auto forward_desc = [&](const dnnl::memory::desc& layout) {
    return dnnl::batch_normalization_forward::primitive_desc(
        dnnl::batch_normalization_forward::desc(dnnl::prop_kind::forward_training, layout, eps_,
                                                flags),
        engine());
  };
  const dnnl::memory::dims dims = data.dims();
  dnnl::memory::desc layout = OnednnPlainDesc(dims, data_type());
  auto forward_pd = forward_desc(layout);
  for (const auto tag : {dnnl::memory::format_tag::nChw16c, dnnl::memory::format_tag::nChw8c}) {
    const dnnl::memory::desc blocked(dims, data_type(), tag);
    auto candidate = forward_desc(blocked);
    if (!OnednnImplementationIs(candidate, "jit")) continue;
    layout = blocked;
    forward_pd = candidate;
    break;
  }
  forward_ = dnnl::batch_normalization_forward(forward_pd);
  backward_ = dnnl::batch_normalization_backward(dnnl::batch_normalization_backward::primitive_desc(
      dnnl::batch_normalization_backward::desc(dnnl::prop_kind::backward, layout, layout, eps_,
                                               flags),
      engine(), forward_pd));
  layout_ = layout;
  forward_without_relu_ = dnnl::batch_normalization_forward();
  if (fused_relu_) workspace_ = dnnl::memory(forward_pd.workspace_desc(), engine());
  // The input Backward reads, kept in the primitive's layout (in place, the bottom is about
  // to be overwritten): Forward takes its buffer or copies it, and places kept_src_ there.
  src_ = dnnl::memory(data, engine(), DNNL_MEMORY_NONE);
  kept_src_ = dnnl::memory(layout, engine(), DNNL_MEMORY_NONE);
  // At least the blob's bytes, which the net's exchange asks for: a bf16 layout takes half.
  SizeKept(std::max(kept_src_.get_desc().get_size(), data.get_size()));
  keep_src_ = dnnl::reorder(src_, kept_src_);
  copy_src_ = dnnl::reorder(kept_src_, kept_src_);
  fused_dst_.Init(engine(), data, layout);
  fused_diff_dst_.Init(engine(), data, layout);
  fused_diff_src_.Init(engine(), data, layout);
  for (dnnl::memory* memory : {&scale_, &shift_}) {
    *memory = dnnl::memory(stats, engine(), DNNL_MEMORY_NONE);
  }
  for (dnnl::memory* memory : {&mean_memory_, &variance_memory_, &diff_scale_, &diff_shift_}) {
    *memory = dnnl::memory(stats, engine());
  }
}

void OnednnBatchNormLayer::PrepareWithoutReLU() {
  const dnnl::batch_normalization_forward::primitive_desc forward_pd(
      dnnl::batch_normalization_forward::desc(dnnl::prop_kind::forward_training, layout_, eps_,
                                              flags_without_relu_),
      engine());
  forward_without_relu_ = dnnl::batch_normalization_forward(forward_pd);
  backward_without_relu_ =
      dnnl::batch_normalization_backward(dnnl::batch_normalization_backward::primitive_desc(
          dnnl::batch_normalization_backward::desc(dnnl::prop_kind::backward, layout_, layout_,
                                                   eps_, flags_without_relu_),
          engine(), forward_pd));
  const auto data = OnednnPlainDesc(data_dims_);
  relu_dst_.Init(engine(), data, layout_);
  relu_diff_.Init(engine(), data, layout_);
}

bool OnednnBatchNormLayer::OutputMayHoldNaN(SyncedMemory& bottom, int count) {
  const auto& params = scale_layer_->blobs();
  const double input = OnednnHeldMaxMagnitude(bottom, count);
  const double scale = OnednnMaxMagnitude(params[0]->cpu_data(), channels_);
  const double shift = params.size() > 1 ? OnednnMaxMagnitude(params[1]->cpu_data(), channels_) : 0;
  // The output is scale * (x - mean) / sqrt(variance + eps) + shift: bounds on |x - mean| and
  // on 1 / sqrt(variance + eps).
  double centred, inverse_deviation;
  if (use_global_stats_) {
    const float* variance = Values(variance_memory_);
    if (!std::isfinite(OnednnMaxMagnitude(variance, channels_))) return true;
    centred = input + OnednnMaxMagnitude(Values(mean_memory_), channels_);
    const double lowest = *std::min_element(variance, variance + channels_);
    inverse_deviation = 1 / std::sqrt(lowest + eps_);
  } else {
    // The batch's mean lies within the input's range, and its variance, a mean of squares of
    // at most (2 input)^2, must not overflow.
    centred = 2 * input;
    if (!OnednnBoundStaysFinite(double(num_) * spatial_dim_ * centred * centred)) return true;
    inverse_deviation = 1 / std::sqrt(double(eps_));
  }
  return !OnednnBoundStaysFinite(scale * centred * inverse_deviation + shift);
}

void OnednnBatchNormLayer::Forward_cpu(const BlobVec& bottom, const BlobVec& top) {
  CountForward();
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
  if (fused()) {
    ForwardFused(bottom, top);
    return;
  }
  Run("batch normalization forward", [&] {
    src_.set_data_handle(const_cast<float*>(bottom[0]->cpu_data()));
    dst_.set_data_handle(top[0]->mutable_cpu_data());
    forward_.execute(stream(), {{DNNL_ARG_SRC, src_},
                                {DNNL_ARG_DST, dst_},
                                {DNNL_ARG_MEAN, mean_memory_},
                                {DNNL_ARG_VARIANCE, variance_memory_}});
  });
  if (use_global_stats_) return;
  UpdateRunningSums();
  float* scale = Values(scale_);
  for (int c = 0; c < channels_; ++c) scale[c] = 1.f / std::sqrt(variance[c] + eps_);
  cpu_copy(top[0]->count(), top[0]->cpu_data(), x_norm_.mutable_cpu_data());
}

void OnednnBatchNormLayer::UpdateRunningSums() {
  // As the CAFFE engine keeps them: s <- maf * s + 1, mean_sum <- maf * mean_sum + mean, and
  // the variance's with the unbiased correction m / (m - 1) (oneDNN's is biased).
  const float* mean = Values(mean_memory_);
  const float* variance = Values(variance_memory_);
  const int m = num_ * spatial_dim_;
  const float maf = moving_average_fraction_;
  float* factor = this->blobs_[2]->mutable_cpu_data();
  factor[0] = factor[0] * maf + 1.f;
  const float correction = m > 1 ? float(m) / float(m - 1) : 1.f;
  float* mean_sum = this->blobs_[0]->mutable_cpu_data();
  float* variance_sum = this->blobs_[1]->mutable_cpu_data();
  for (int c = 0; c < channels_; ++c) {
    mean_sum[c] = maf * mean_sum[c] + mean[c];
    variance_sum[c] = maf * variance_sum[c] + correction * variance[c];
  }
}

void OnednnBatchNormLayer::ForwardFused(const BlobVec& bottom, const BlobVec& top) {
  const auto& params = scale_layer_->blobs();
  // Where the net exchanged the blob's buffer (WantsExchange), the input is in kept() and
  // the blob's buffer is this Forward's output.
  const bool exchanged = TakeExchanged();
  SyncedMemory& input = exchanged ? *kept() : *bottom[0]->data();
  UseOnednnThreads();
  const bool caffe_relu = fused_relu_ && OutputMayHoldNaN(input, bottom[0]->count());
  SetRanCaffeReLU(caffe_relu);
  if (caffe_relu && !forward_without_relu_) {
    Build("batch normalization without relu", [&] { PrepareWithoutReLU(); });
  }
  OnednnPlaceInWorkspace(&fused_dst_);
  Run("batch normalization forward with scale and shift", [&] {
    // A convolution before it leaves its output in this layout: kept as it is, by the net's
    // exchange where it can (ResNet-50 at batch 8: 53 copies, 28 ms of 1640 on one thread),
    // else copied. Any other input is converted into the layout.
    if (exchanged) {
      kept_src_.set_data_handle(const_cast<void*>(input.raw_cpu_data()));
    } else {
      kept_src_.set_data_handle(kept()->mutable_raw_cpu_data(nullptr));
      if (ArrivesKept(input)) {
        dnnl::memory in(kept_src_.get_desc(), engine(), const_cast<void*>(input.raw_cpu_data()));
        copy_src_.execute(stream(), in, kept_src_);
      } else {
        src_.set_data_handle(const_cast<void*>(input.cpu_data()));
        keep_src_.execute(stream(), src_, kept_src_);
      }
    }
    scale_.set_data_handle(const_cast<float*>(params[0]->cpu_data()));
    OnednnArgs args{{DNNL_ARG_SRC, kept_src_},
                    {DNNL_ARG_DST, fused_dst_.Write(*top[0]->data())},
                    {DNNL_ARG_MEAN, mean_memory_},
                    {DNNL_ARG_VARIANCE, variance_memory_},
                    {DNNL_ARG_SCALE, scale_}};
    if (params.size() > 1) {
      shift_.set_data_handle(const_cast<float*>(params[1]->cpu_data()));
      args[DNNL_ARG_SHIFT] = shift_;
    }
    if (caffe_relu) {
      forward_without_relu_.execute(stream(), args);
      stream().wait();
      OnednnReLUInPlace(fused_dst_.primitive(), 0.f);
    } else {
      if (fused_relu_) args[DNNL_ARG_WORKSPACE] = workspace_;
      forward_.execute(stream(), args);
    }
    fused_dst_.Publish(stream());
  });
  if (!use_global_stats_) UpdateRunningSums();
}

bool OnednnBatchNormLayer::ArrivesKept(const SyncedMemory& data) const {
  const OnednnLayout* held = OnednnLayoutOf(data);
  return held != nullptr && held->desc() == kept_src_.get_desc();
}

bool OnednnBatchNormLayer::WantsExchange(const SyncedMemory& data) const {
  // On a GPU the CAFFE engine's kernels run, on the blob's own buffer.
  return this->mode() == Mode::CPU && ArrivesKept(data);
}

void OnednnBatchNormLayer::ReadDiffFromSum(const OnednnEltwiseLayer* sum, Blob<float>* sum_top) {
  sum_ = sum;
  sum_top_ = sum_top;
}

void OnednnBatchNormLayer::BackwardFused(const BlobVec& top, const BlobVec& bottom) {
  const auto& params = scale_layer_->blobs();
  const bool caffe_relu = ran_caffe_relu();
  if (caffe_relu) {
    OnednnPlaceInWorkspace(&fused_diff_dst_, &fused_diff_src_, &relu_dst_, &relu_diff_);
  } else {
    OnednnPlaceInWorkspace(&fused_diff_dst_, &fused_diff_src_);
  }
  Run("batch normalization backward with scale and shift", [&] {
    scale_.set_data_handle(const_cast<float*>(params[0]->cpu_data()));
    // The Eltwise after it left this blob's diff unwritten: the same values are its top's.
    const bool from_sum = sum_ != nullptr && sum_->LeftToReader(*top[0]);
    SyncedMemory& diff_dst = from_sum ? *sum_top_->diff() : *top[0]->diff();
    dnnl::memory relu_diff_dst = fused_diff_dst_.Read(stream(), diff_dst);
    if (caffe_relu) {
      // The ReLU's gradient goes where the unfused ReLU writes it, the blob's diff (never the
      // Eltwise's top's, which its other bottom reads), and the primitive reads it there.
      const dnnl::memory& relu_dst = relu_dst_.Read(stream(), *top[0]->data());
      const dnnl::memory& relu_diff_src = relu_diff_.Write(*bottom[0]->diff());
      stream().wait();
      ReLUGradient(relu_dst, relu_diff_dst, relu_diff_src);
      relu_diff_dst = relu_diff_src;
    }
    OnednnArgs args{{DNNL_ARG_SRC, kept_src_},
                    {DNNL_ARG_DIFF_DST, relu_diff_dst},
                    {DNNL_ARG_MEAN, mean_memory_},
                    {DNNL_ARG_VARIANCE, variance_memory_},
                    {DNNL_ARG_SCALE, scale_},
                    {DNNL_ARG_DIFF_SCALE, diff_scale_},
                    {DNNL_ARG_DIFF_SRC, fused_diff_src_.Write(*bottom[0]->diff())}};
    if (params.size() > 1) {
      shift_.set_data_handle(const_cast<float*>(params[1]->cpu_data()));
      args[DNNL_ARG_SHIFT] = shift_;
      args[DNNL_ARG_DIFF_SHIFT] = diff_shift_;
    }
    if (caffe_relu) {
      backward_without_relu_.execute(stream(), args);
    } else {
      if (fused_relu_) args[DNNL_ARG_WORKSPACE] = workspace_;
      backward_.execute(stream(), args);
    }
    fused_diff_src_.Publish(stream());
  });
  // Parameter gradients accumulate, as the Scale layer's own Backward would.
  const dnnl::memory* diffs[] = {&diff_scale_, &diff_shift_};
  for (std::size_t p = 0; p < params.size(); ++p) {
    if (!scale_layer_->param_propagate_down(static_cast<int>(p))) continue;
    cpu_axpy(channels_, 1.f, static_cast<const float*>(diffs[p]->get_data_handle()),
             params[p]->mutable_cpu_diff());
  }
}

void OnednnBatchNormLayer::Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                                        const BlobVec& bottom) {
  if (bottom[0]->count() == 0) {
    if (propagate_down[0]) BatchNormLayer<float>::Backward_cpu(top, propagate_down, bottom);
    return;
  }
  // Fused, the Scale's parameter gradients come from here even where the bottom needs none.
  if (fused()) {
    BackwardFused(top, bottom);
    return;
  }
  if (!propagate_down[0]) return;
  Run("batch normalization backward", [&] {
    diff_dst_.set_data_handle(const_cast<float*>(top[0]->cpu_diff()));
    diff_src_.set_data_handle(bottom[0]->mutable_cpu_diff());
    if (use_global_stats_) {
      // An affine map per channel: oneDNN reads the statistics, not the input.
      src_.set_data_handle(const_cast<float*>(bottom[0]->cpu_data()));
      backward_.execute(stream(), {{DNNL_ARG_SRC, src_},
                                   {DNNL_ARG_DIFF_DST, diff_dst_},
                                   {DNNL_ARG_MEAN, mean_memory_},
                                   {DNNL_ARG_VARIANCE, variance_memory_},
                                   {DNNL_ARG_DIFF_SRC, diff_src_}});
    } else {
      src_.set_data_handle(const_cast<float*>(x_norm_.cpu_data()));
      backward_.execute(stream(), {{DNNL_ARG_SRC, src_},
                                   {DNNL_ARG_DIFF_DST, diff_dst_},
                                   {DNNL_ARG_MEAN, zero_mean_},
                                   {DNNL_ARG_VARIANCE, unit_variance_},
                                   {DNNL_ARG_SCALE, scale_},
                                   {DNNL_ARG_DIFF_SCALE, diff_scale_},
                                   {DNNL_ARG_DIFF_SRC, diff_src_}});
    }
  });
}

DOPPIO_REGISTER_LAYER_ENGINE_FLOAT_IF(BatchNorm, ONEDNN, OnednnBatchNormLayer, nullptr);

}  // namespace doppio

#endif  // DOPPIO_WITH_ONEDNN
