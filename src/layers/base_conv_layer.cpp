#include "doppio/layers/base_conv_layer.hpp"

#include <algorithm>
#include <cstring>

#include "doppio/core/filler.hpp"
#include "doppio/util/im2col.hpp"
#include "doppio/util/math_functions.hpp"

namespace doppio {

namespace {

// Reads a spatial field that may be given as a repeated value (one for all axes, or one per
// axis) or as the _h/_w pair. Returns false when neither form is given.
bool ReadSpatialField(const std::string& who, const char* name, const char* repeated_name,
                      const google::protobuf::RepeatedField<uint32_t>& values, bool has_h,
                      bool has_w, uint32_t h, uint32_t w, int* out_h, int* out_w) {
  if (has_h || has_w) {
    DOPPIO_ENSURE(values.size() == 0) << who << ": convolution_param." << repeated_name << " and "
                                      << name << "_h/" << name << "_w are exclusive; give one form";
    DOPPIO_ENSURE(has_h && has_w) << who << ": convolution_param." << name << "_h and " << name
                                  << "_w must be given together";
    *out_h = static_cast<int>(h);
    *out_w = static_cast<int>(w);
    return true;
  }
  if (values.size() == 0) return false;
  DOPPIO_ENSURE(values.size() <= 2)
      << who << ": convolution_param." << repeated_name << " has " << values.size()
      << " values, but only 2-d convolution is supported (give 1 value or 2)";
  *out_h = static_cast<int>(values.Get(0));
  *out_w = static_cast<int>(values.Get(values.size() - 1));
  return true;
}

}  // namespace

template <typename Dtype>
void BaseConvolutionLayer<Dtype>::LayerSetUp(const BlobVec& bottom, const BlobVec& top) {
  const std::string who = this->Describe();
  const ConvolutionParameter& p = this->layer_param_.convolution_param();
  DOPPIO_ENSURE(!p.force_nd_im2col())
      << who << ": convolution_param.force_nd_im2col is not supported (only 2-d im2col)";

  const int num_axes = bottom[0]->num_axes();
  DOPPIO_ENSURE(p.axis() >= -num_axes && p.axis() < num_axes)
      << who << ": convolution_param.axis " << p.axis() << " is out of range for input shape "
      << bottom[0]->shape_string();
  channel_axis_ = p.axis() < 0 ? p.axis() + num_axes : p.axis();

  if (!ReadSpatialField(who, "kernel", "kernel_size", p.kernel_size(), p.has_kernel_h(),
                        p.has_kernel_w(), p.kernel_h(), p.kernel_w(), &kernel_h_, &kernel_w_)) {
    DOPPIO_FAIL() << who
                  << ": convolution_param.kernel_size (or kernel_h and kernel_w) is required";
  }
  if (!ReadSpatialField(who, "stride", "stride", p.stride(), p.has_stride_h(), p.has_stride_w(),
                        p.stride_h(), p.stride_w(), &stride_h_, &stride_w_)) {
    stride_h_ = stride_w_ = 1;
  }
  if (!ReadSpatialField(who, "pad", "pad", p.pad(), p.has_pad_h(), p.has_pad_w(), p.pad_h(),
                        p.pad_w(), &pad_h_, &pad_w_)) {
    pad_h_ = pad_w_ = 0;
  }
  if (!ReadSpatialField(who, "dilation", "dilation", p.dilation(), false, false, 0, 0, &dilation_h_,
                        &dilation_w_)) {
    dilation_h_ = dilation_w_ = 1;
  }
  const int num_spatial_axes = num_axes - channel_axis_ - 1;
  DOPPIO_ENSURE(num_spatial_axes == 2)
      << who << ": input shape " << bottom[0]->shape_string() << " with convolution_param.axis "
      << p.axis() << " has " << num_spatial_axes
      << " spatial axes, but only 2-d convolution is supported";
  DOPPIO_ENSURE(kernel_h_ > 0 && kernel_w_ > 0)
      << who << ": convolution_param kernel size must be positive, got " << kernel_h_ << "x"
      << kernel_w_;
  DOPPIO_ENSURE(stride_h_ > 0 && stride_w_ > 0)
      << who << ": convolution_param stride must be positive, got " << stride_h_ << "x"
      << stride_w_;
  DOPPIO_ENSURE(dilation_h_ > 0 && dilation_w_ > 0)
      << who << ": convolution_param.dilation must be positive, got " << dilation_h_ << "x"
      << dilation_w_;
  is_1x1_ = kernel_h_ == 1 && kernel_w_ == 1 && stride_h_ == 1 && stride_w_ == 1 && pad_h_ == 0 &&
            pad_w_ == 0;

  num_output_ = static_cast<int>(p.num_output());
  DOPPIO_ENSURE(num_output_ > 0) << who << ": convolution_param.num_output must be positive";
  group_ = static_cast<int>(p.group());
  DOPPIO_ENSURE(group_ > 0) << who << ": convolution_param.group must be positive";
  channels_ = bottom[0]->shape(channel_axis_);
  DOPPIO_ENSURE(channels_ > 0) << who << ": input " << bottom[0]->shape_string()
                               << " has no channels";
  DOPPIO_ENSURE(channels_ % group_ == 0)
      << who << ": input channels (" << channels_
      << ") must be divisible by convolution_param.group (" << group_ << ")";
  DOPPIO_ENSURE(num_output_ % group_ == 0)
      << who << ": convolution_param.num_output (" << num_output_
      << ") must be divisible by convolution_param.group (" << group_ << ")";
  if (reverse_dimensions()) {
    conv_out_channels_ = channels_;
    conv_in_channels_ = num_output_;
  } else {
    conv_out_channels_ = num_output_;
    conv_in_channels_ = channels_;
  }
  bias_term_ = p.bias_term();

  const std::vector<int> weight_shape = {conv_out_channels_, conv_in_channels_ / group_, kernel_h_,
                                         kernel_w_};
  const std::vector<int> bias_shape = {num_output_};
  if (!this->blobs_.empty()) {
    // Given weights (from the LayerParameter): they must fit; a legacy 4-d bias is accepted.
    const size_t expected = bias_term_ ? 2 : 1;
    DOPPIO_ENSURE(this->blobs_.size() == expected)
        << who << ": has " << this->blobs_.size() << " parameter blob(s), expected " << expected
        << (bias_term_ ? " (weights and bias)" : " (weights; bias_term is false)");
    DOPPIO_ENSURE(this->blobs_[0]->shape() == weight_shape)
        << who << ": weight shape " << this->blobs_[0]->shape_string() << " does not match the "
        << "expected " << ShapeString(weight_shape);
    if (bias_term_) {
      DOPPIO_ENSURE(this->blobs_[1]->count() == num_output_)
          << who << ": bias shape " << this->blobs_[1]->shape_string()
          << " does not match the expected " << ShapeString(bias_shape);
      this->blobs_[1]->Reshape(bias_shape);
    }
  } else {
    this->blobs_.push_back(std::make_shared<Blob<Dtype>>(weight_shape));
    GetFiller<Dtype>(p.weight_filler())->Fill(this->blobs_[0].get(), this->rng());
    if (bias_term_) {
      this->blobs_.push_back(std::make_shared<Blob<Dtype>>(bias_shape));
      GetFiller<Dtype>(p.bias_filler())->Fill(this->blobs_[1].get(), this->rng());
    }
  }
  this->param_propagate_down_.resize(this->blobs_.size(), true);
}

template <typename Dtype>
void BaseConvolutionLayer<Dtype>::Reshape(const BlobVec& bottom, const BlobVec& top) {
  // Runs before every Forward: messages are only built on failure.
  const Blob<Dtype>& in = *bottom[0];
  DOPPIO_ENSURE(in.num_axes() == channel_axis_ + 3)
      << this->Describe() << ": input shape " << in.shape_string()
      << " does not have 2 spatial axes after the channel axis " << channel_axis_;
  DOPPIO_ENSURE(in.shape(channel_axis_) == channels_)
      << this->Describe() << ": input " << in.shape_string() << " has " << in.shape(channel_axis_)
      << " channels, but the layer was set up for " << channels_;
  for (size_t i = 1; i < bottom.size(); ++i) {
    DOPPIO_ENSURE(bottom[i]->shape() == in.shape())
        << this->Describe() << ": all bottoms must have the same shape; bottom 0 is "
        << in.shape_string() << ", bottom " << i << " is " << bottom[i]->shape_string();
  }
  num_ = in.count(0, channel_axis_);
  input_shape_[0] = in.shape(channel_axis_ + 1);
  input_shape_[1] = in.shape(channel_axis_ + 2);
  DOPPIO_ENSURE(input_shape_[0] > 0 && input_shape_[1] > 0)
      << this->Describe() << ": input " << in.shape_string() << " has an empty spatial axis";
  compute_output_shape();

  std::vector<int> top_shape(in.shape().begin(), in.shape().begin() + channel_axis_);
  top_shape.push_back(num_output_);
  top_shape.insert(top_shape.end(), output_shape_.begin(), output_shape_.end());
  for (auto* t : top) t->Reshape(top_shape);

  const int in_spatial = input_shape_[0] * input_shape_[1];
  out_spatial_dim_ = output_shape_[0] * output_shape_[1];
  if (reverse_dimensions()) {
    conv_input_shape_[0] = output_shape_[0];
    conv_input_shape_[1] = output_shape_[1];
    conv_out_spatial_dim_ = in_spatial;
  } else {
    conv_input_shape_[0] = input_shape_[0];
    conv_input_shape_[1] = input_shape_[1];
    conv_out_spatial_dim_ = out_spatial_dim_;
  }
  kernel_dim_ = conv_in_channels_ / group_ * kernel_h_ * kernel_w_;
  weight_offset_ = conv_out_channels_ * kernel_dim_ / group_;
  bottom_dim_ = in.count(channel_axis_);
  top_dim_ = top[0]->count(channel_axis_);
  conv_input_dim_ = reverse_dimensions() ? top_dim_ : bottom_dim_;
  conv_output_dim_ = reverse_dimensions() ? bottom_dim_ : top_dim_;

  // Narrow products run BLAS poorly, so images with small outputs share one GEMM of about
  // kTargetColumns columns. Wider outputs run one image at a time: that keeps each image's
  // column buffer small enough to stay in cache between im2col and the GEMM, which measured
  // faster than batching them.
  constexpr int kBatchBelowColumns = 256;
  constexpr int kTargetColumns = 512;
  int images = 1;
  if (conv_out_spatial_dim_ > 0 && conv_out_spatial_dim_ < kBatchBelowColumns) {
    images = std::max(
        1, std::min(num_, (kTargetColumns + conv_out_spatial_dim_ - 1) / conv_out_spatial_dim_));
  }
  images_per_gemm_ = images;
  // A single 1x1 image is read in place: no column buffer.
  if (!is_1x1_ || images_per_gemm_ > 1) {
    col_buffer_.Reshape({kernel_dim_ * group_, images_per_gemm_ * conv_out_spatial_dim_});
  }
  if (images_per_gemm_ > 1) {
    gather_buffer_.Reshape({conv_out_channels_, images_per_gemm_ * conv_out_spatial_dim_});
  }
  if (bias_term_ && bias_multiplier_.count() != out_spatial_dim_) {
    bias_multiplier_.Reshape({out_spatial_dim_});
    cpu_set(out_spatial_dim_, Dtype(1), bias_multiplier_.mutable_cpu_data());
  }
}

template <typename Dtype>
void BaseConvolutionLayer<Dtype>::conv_im2col_cpu(const Dtype* data, int count, Dtype* col) const {
  const int row_stride = count * conv_out_spatial_dim_;
  for (int b = 0; b < count; ++b) {
    im2col_cpu(data + static_cast<size_t>(b) * conv_input_dim_, conv_in_channels_,
               conv_input_shape_[0], conv_input_shape_[1], kernel_h_, kernel_w_, pad_h_, pad_w_,
               stride_h_, stride_w_, dilation_h_, dilation_w_,
               col + static_cast<size_t>(b) * conv_out_spatial_dim_, row_stride);
  }
}

template <typename Dtype>
void BaseConvolutionLayer<Dtype>::conv_col2im_cpu(const Dtype* col, int count, Dtype* data) const {
  const int row_stride = count * conv_out_spatial_dim_;
  for (int b = 0; b < count; ++b) {
    col2im_cpu(col + static_cast<size_t>(b) * conv_out_spatial_dim_, conv_in_channels_,
               conv_input_shape_[0], conv_input_shape_[1], kernel_h_, kernel_w_, pad_h_, pad_w_,
               stride_h_, stride_w_, dilation_h_, dilation_w_,
               data + static_cast<size_t>(b) * conv_input_dim_, row_stride);
  }
}

template <typename Dtype>
void BaseConvolutionLayer<Dtype>::gather_output(const Dtype* output, int count,
                                                Dtype* buffer) const {
  const int spatial = conv_out_spatial_dim_;
  const size_t row_stride = static_cast<size_t>(count) * spatial;
  for (int b = 0; b < count; ++b) {
    const Dtype* src = output + static_cast<size_t>(b) * conv_output_dim_;
    Dtype* dst = buffer + static_cast<size_t>(b) * spatial;
    for (int c = 0; c < conv_out_channels_; ++c) {
      std::memcpy(dst + c * row_stride, src + static_cast<size_t>(c) * spatial,
                  sizeof(Dtype) * spatial);
    }
  }
}

template <typename Dtype>
void BaseConvolutionLayer<Dtype>::scatter_output(const Dtype* buffer, int count,
                                                 Dtype* output) const {
  const int spatial = conv_out_spatial_dim_;
  const size_t row_stride = static_cast<size_t>(count) * spatial;
  for (int b = 0; b < count; ++b) {
    const Dtype* src = buffer + static_cast<size_t>(b) * spatial;
    Dtype* dst = output + static_cast<size_t>(b) * conv_output_dim_;
    for (int c = 0; c < conv_out_channels_; ++c) {
      std::memcpy(dst + static_cast<size_t>(c) * spatial, src + c * row_stride,
                  sizeof(Dtype) * spatial);
    }
  }
}

template <typename Dtype>
void BaseConvolutionLayer<Dtype>::forward_cpu_gemm(const Dtype* input, int count,
                                                   const Dtype* weights, Dtype* output,
                                                   bool skip_im2col) {
  const bool single = count == 1;
  const int columns = count * conv_out_spatial_dim_;
  const Dtype* col = input;
  if (!(is_1x1_ && single)) {
    if (!skip_im2col) conv_im2col_cpu(input, count, col_buffer_.mutable_cpu_data());
    col = col_buffer_.cpu_data();
  }
  Dtype* out = single ? output : gather_buffer_.mutable_cpu_data();
  const int m = conv_out_channels_ / group_;
  for (int g = 0; g < group_; ++g) {
    cpu_gemm<Dtype>(Trans::kNo, Trans::kNo, m, columns, kernel_dim_, Dtype(1),
                    weights + static_cast<size_t>(weight_offset_) * g,
                    col + static_cast<size_t>(kernel_dim_) * columns * g, Dtype(0),
                    out + static_cast<size_t>(m) * columns * g);
  }
  if (!single) scatter_output(out, count, output);
}

template <typename Dtype>
void BaseConvolutionLayer<Dtype>::backward_cpu_gemm(const Dtype* output, int count,
                                                    const Dtype* weights, Dtype* input,
                                                    bool output_gathered) {
  const bool single = count == 1;
  const int columns = count * conv_out_spatial_dim_;
  const Dtype* out = output;
  if (!single) {
    if (!output_gathered) gather_output(output, count, gather_buffer_.mutable_cpu_data());
    out = gather_buffer_.cpu_data();
  }
  const bool direct = is_1x1_ && single;
  Dtype* col = direct ? input : col_buffer_.mutable_cpu_data();
  const int m = conv_out_channels_ / group_;
  for (int g = 0; g < group_; ++g) {
    cpu_gemm<Dtype>(Trans::kYes, Trans::kNo, kernel_dim_, columns, m, Dtype(1),
                    weights + static_cast<size_t>(weight_offset_) * g,
                    out + static_cast<size_t>(m) * columns * g, Dtype(0),
                    col + static_cast<size_t>(kernel_dim_) * columns * g);
  }
  if (!direct) conv_col2im_cpu(col, count, input);
}

template <typename Dtype>
void BaseConvolutionLayer<Dtype>::weight_cpu_gemm(const Dtype* input, const Dtype* output,
                                                  int count, Dtype* weights, bool skip_im2col) {
  const bool single = count == 1;
  const int columns = count * conv_out_spatial_dim_;
  const Dtype* col = input;
  if (!(is_1x1_ && single)) {
    if (!skip_im2col) conv_im2col_cpu(input, count, col_buffer_.mutable_cpu_data());
    col = col_buffer_.cpu_data();
  }
  const Dtype* out = output;
  if (!single) {
    gather_output(output, count, gather_buffer_.mutable_cpu_data());
    out = gather_buffer_.cpu_data();
  }
  const int m = conv_out_channels_ / group_;
  for (int g = 0; g < group_; ++g) {
    cpu_gemm<Dtype>(Trans::kNo, Trans::kYes, m, kernel_dim_, columns, Dtype(1),
                    out + static_cast<size_t>(m) * columns * g,
                    col + static_cast<size_t>(kernel_dim_) * columns * g, Dtype(1),
                    weights + static_cast<size_t>(weight_offset_) * g);
  }
}

template <typename Dtype>
void BaseConvolutionLayer<Dtype>::forward_cpu_bias(Dtype* output, const Dtype* bias) {
  cpu_gemm<Dtype>(Trans::kNo, Trans::kNo, num_output_, out_spatial_dim_, 1, Dtype(1), bias,
                  bias_multiplier_.cpu_data(), Dtype(1), output);
}

template <typename Dtype>
void BaseConvolutionLayer<Dtype>::backward_cpu_bias(Dtype* bias, const Dtype* output) {
  cpu_gemv<Dtype>(Trans::kNo, num_output_, out_spatial_dim_, Dtype(1), output,
                  bias_multiplier_.cpu_data(), Dtype(1), bias);
}

DOPPIO_INSTANTIATE_CLASS(BaseConvolutionLayer);

}  // namespace doppio
