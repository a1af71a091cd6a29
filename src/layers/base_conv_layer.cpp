#include "doppio/layers/base_conv_layer.hpp"

#include <algorithm>
#include <cstring>

#include "doppio/core/filler.hpp"
#include "doppio/layers/conv_geometry.hpp"
#include "doppio/util/host_workspace.hpp"
#include "doppio/util/im2col.hpp"
#include "doppio/util/math_functions.hpp"
#include "doppio/util/thread_pool.hpp"

namespace doppio {

template <typename Dtype>
void BaseConvolutionLayer<Dtype>::LayerSetUp(const BlobVec& bottom, const BlobVec& top) {
  const std::string who = this->Describe();
  const ConvolutionParameter& p = this->layer_param_.convolution_param();
  const ConvGeometry geometry = ReadConvGeometry(who, p, bottom[0]->shape());
  channel_axis_ = geometry.channel_axis;
  kernel_h_ = geometry.kernel_h;
  kernel_w_ = geometry.kernel_w;
  stride_h_ = geometry.stride_h;
  stride_w_ = geometry.stride_w;
  pad_h_ = geometry.pad_h;
  pad_w_ = geometry.pad_w;
  dilation_h_ = geometry.dilation_h;
  dilation_w_ = geometry.dilation_w;
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

  // Two ways to run the GEMMs, chosen by shape (both measured with OpenBLAS 0.3.21):
  // - Small filters (at most kSmallRows out channels per group, and out channels x
  //   kernel_dim_ up to kSmallProduct / 16): one image at a time, each product cut into
  //   blocks of block_ columns of at most kSmallProduct multiply-adds. OpenBLAS runs such
  //   small products without packing its operands, near the core's peak (CIFAR-10's 5x5
  //   convolutions: 105-113 GFLOPS against 60-90 for the same work in one call). With more
  //   output channels its packed kernels reach 90-100 GFLOPS themselves and blocks gain
  //   nothing (GoogLeNet's 128-channel 1x1s ran slower). The weight gradient
  //   W += top * col^T is a product with B transposed, which OpenBLAS only runs unpacked
  //   for weights of up to kSmallTransposed values per group; larger ones run as
  //   W^T += col * top^T, a plain product, on a transposed copy of each image's top diff,
  //   into transposed accumulators (CIFAR-10: 92-112 GFLOPS against 46-84).
  // - Otherwise narrow products run BLAS poorly, so images with small outputs share one
  //   GEMM of about kTargetColumns columns. Wider outputs run one image at a time: that
  //   keeps each image's column buffer small enough to stay in cache between im2col and the
  //   GEMM, which measured faster than batching them. Every thread needs chunks of its own,
  //   which caps the chunk at the batch's share of one thread.
  // The small path also needs the image's column matrix to stay in cache (kColumnBytes).
  constexpr double kSmallProduct = 1e6;
  constexpr int kSmallRows = 64;
  constexpr int kSmallTransposed = 1200;
  constexpr size_t kColumnBytes = size_t(1) << 20;
  constexpr int kBatchBelowColumns = 256;
  constexpr int kTargetColumns = 512;
  const int rows = conv_out_channels_ / group_;
  const int block =
      static_cast<int>(kSmallProduct / (static_cast<double>(rows) * kernel_dim_)) / 16 * 16;
  const size_t column_bytes =
      sizeof(Dtype) * static_cast<size_t>(kernel_dim_) * group_ * conv_out_spatial_dim_;
  block_ = rows <= kSmallRows && block >= 16 && column_bytes <= kColumnBytes ? block : 0;
  weight_t_ = block_ && rows * kernel_dim_ > kSmallTransposed;
  int images = 1;
  if (!block_ && conv_out_spatial_dim_ > 0 && conv_out_spatial_dim_ < kBatchBelowColumns) {
    const int threads = ParallelParts();
    const int share = std::max(1, (num_ + threads - 1) / threads);
    images = std::max(
        1, std::min(share, (kTargetColumns + conv_out_spatial_dim_ - 1) / conv_out_spatial_dim_));
  }
  images_per_gemm_ = images;
  // A single 1x1 image is read in place: no column buffer.
  const bool columns = !is_1x1_ || images_per_gemm_ > 1;
  const int column_count = images_per_gemm_ * conv_out_spatial_dim_;
  col_part_size_ = columns ? static_cast<size_t>(kernel_dim_) * group_ * column_count : 0;
  gather_part_size_ =
      images_per_gemm_ > 1 ? static_cast<size_t>(conv_out_channels_) * column_count : 0;
  top_t_part_size_ =
      weight_t_ ? static_cast<size_t>(conv_out_channels_) * conv_out_spatial_dim_ : 0;
  if (bias_term_ && bias_multiplier_.count() != out_spatial_dim_) {
    bias_multiplier_.Reshape({out_spatial_dim_});
    cpu_set(out_spatial_dim_, Dtype(1), bias_multiplier_.mutable_cpu_data());
  }
}

namespace {

// out (cols x rows) = in (rows x cols)^T, both row-major, a band of columns at a time so
// that the rows being written stay in L1.
template <typename Dtype>
void Transpose(const Dtype* in, int rows, int cols, Dtype* out) {
  constexpr int kBand = 32;
  for (int j0 = 0; j0 < cols; j0 += kBand) {
    const int j1 = std::min(cols, j0 + kBand);
    for (int r = 0; r < rows; ++r) {
      const Dtype* src = in + static_cast<size_t>(r) * cols;
      for (int j = j0; j < j1; ++j) out[static_cast<size_t>(j) * rows + r] = src[j];
    }
  }
}

// Grows `blob` to hold `parts` buffers of `size` values and returns its data.
template <typename Dtype>
Dtype* PartBuffers(Blob<Dtype>* blob, size_t size, int parts) {
  if (static_cast<size_t>(blob->count()) < size * parts) {
    blob->Reshape({parts, static_cast<int>(size)});
  }
  return blob->mutable_cpu_data();
}

}  // namespace

template <typename Dtype>
void BaseConvolutionLayer<Dtype>::prepare_parts(int parts) {
  // These buffers live only while the layer runs: all convolutions share the thread's
  // workspace, which costs the largest of them rather than their sum (Caffe keeps a column
  // buffer per layer).
  const size_t col = col_part_size_ * parts, gather = gather_part_size_ * parts;
  const size_t top_t = top_t_part_size_ * parts;
  Dtype* workspace =
      col + gather + top_t > 0
          ? static_cast<Dtype*>(HostWorkspace(sizeof(Dtype) * (col + gather + top_t)))
          : nullptr;
  col_data_ = col ? workspace : nullptr;
  gather_data_ = gather ? workspace + col : nullptr;
  top_t_data_ = top_t ? workspace + col + gather : nullptr;
  bias_multiplier_data_ = bias_term_ ? bias_multiplier_.cpu_data() : nullptr;
}

template <typename Dtype>
void BaseConvolutionLayer<Dtype>::prepare_param_diffs(int parts, Dtype* weight_diff,
                                                      Dtype* bias_diff) {
  param_diff_[0] = weight_diff;
  param_diff_[1] = bias_diff;
  Blob<Dtype>* copies[2] = {&weight_diff_parts_, &bias_diff_parts_};
  for (int k = 0; k < 2; ++k) {
    param_diff_parts_[k] = nullptr;
    // The small path's weight gradient is transposed, so part 0 needs a copy too.
    const int own = k == 0 && weight_t_ ? parts : parts - 1;
    if (!param_diff_[k] || own == 0) continue;
    const size_t count = this->blobs_[k]->count();
    param_diff_parts_[k] = PartBuffers(copies[k], count, own);
    cpu_set(static_cast<int>(count * own), Dtype(0), param_diff_parts_[k]);
  }
}

template <typename Dtype>
Dtype* BaseConvolutionLayer<Dtype>::param_diff_part(int index, int part) const {
  if (!param_diff_[index]) return nullptr;
  const size_t count = this->blobs_[index]->count();
  if (index == 0 && weight_t_) return param_diff_parts_[0] + count * part;
  return part == 0 ? param_diff_[index] : param_diff_parts_[index] + count * (part - 1);
}

template <typename Dtype>
void BaseConvolutionLayer<Dtype>::reduce_param_diffs(int parts) {
  for (int k = 0; k < 2; ++k) {
    Dtype* diff = param_diff_[k];
    if (!diff) continue;
    const Dtype* copies = param_diff_parts_[k];
    const int count = this->blobs_[k]->count();
    if (k == 0 && weight_t_) {
      // Row o of group g of the weights gathers column o of the group's transposed copies.
      const int m = conv_out_channels_ / group_;
      ParallelFor(conv_out_channels_, 64, [&](int begin, int end, int) {
        for (int row = begin; row < end; ++row) {
          const int g = row / m, o = row % m;
          Dtype* out = diff + static_cast<size_t>(row) * kernel_dim_;
          for (int p = 0; p < parts; ++p) {
            const Dtype* in = copies + static_cast<size_t>(count) * p +
                              static_cast<size_t>(weight_offset_) * g + o;
            for (int i = 0; i < kernel_dim_; ++i) out[i] += in[static_cast<size_t>(i) * m];
          }
        }
      });
      continue;
    }
    if (parts == 1) continue;
    ParallelFor(count, 4096, [&](int begin, int end, int) {
      for (int p = 1; p < parts; ++p) {
        const Dtype* copy = copies + static_cast<size_t>(count) * (p - 1);
        for (int i = begin; i < end; ++i) diff[i] += copy[i];
      }
    });
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
void BaseConvolutionLayer<Dtype>::conv_col2im_cpu(Dtype* col, int count, Dtype* data) const {
  const int row_stride = count * conv_out_spatial_dim_;
  for (int b = 0; b < count; ++b) {
    col2im_cpu_clobbering(col + static_cast<size_t>(b) * conv_out_spatial_dim_, conv_in_channels_,
                          conv_input_shape_[0], conv_input_shape_[1], kernel_h_, kernel_w_, pad_h_,
                          pad_w_, stride_h_, stride_w_, dilation_h_, dilation_w_,
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
                                                   const Dtype* weights, Dtype* output, int part,
                                                   bool skip_im2col) {
  const bool single = count == 1;
  const int columns = count * conv_out_spatial_dim_;
  const Dtype* col = input;
  if (!(is_1x1_ && single)) {
    Dtype* buffer = col_data_ + col_part_size_ * part;
    if (!skip_im2col) conv_im2col_cpu(input, count, buffer);
    col = buffer;
  }
  Dtype* out = single ? output : gather_data_ + gather_part_size_ * part;
  const int m = conv_out_channels_ / group_;
  // Blocks of columns (the whole product when not on the small path).
  const int block = block_ ? block_ : columns;
  for (int g = 0; g < group_; ++g) {
    const Dtype* w = weights + static_cast<size_t>(weight_offset_) * g;
    const Dtype* col_g = col + static_cast<size_t>(kernel_dim_) * columns * g;
    Dtype* out_g = out + static_cast<size_t>(m) * columns * g;
    for (int j = 0; j < columns; j += block) {
      cpu_gemm<Dtype>(Trans::kNo, Trans::kNo, m, std::min(block, columns - j), kernel_dim_,
                      Dtype(1), w, kernel_dim_, col_g + j, columns, Dtype(0), out_g + j, columns);
    }
  }
  if (!single) scatter_output(out, count, output);
}

template <typename Dtype>
void BaseConvolutionLayer<Dtype>::backward_cpu_gemm(const Dtype* output, int count,
                                                    const Dtype* weights, Dtype* input, int part,
                                                    bool output_gathered) {
  const bool single = count == 1;
  const int columns = count * conv_out_spatial_dim_;
  const Dtype* out = output;
  if (!single) {
    Dtype* gathered = gather_data_ + gather_part_size_ * part;
    if (!output_gathered) gather_output(output, count, gathered);
    out = gathered;
  }
  const bool direct = is_1x1_ && single;
  Dtype* col = direct ? input : col_data_ + col_part_size_ * part;
  const int m = conv_out_channels_ / group_;
  const int block = block_ ? block_ : columns;
  for (int g = 0; g < group_; ++g) {
    const Dtype* w = weights + static_cast<size_t>(weight_offset_) * g;
    const Dtype* out_g = out + static_cast<size_t>(m) * columns * g;
    Dtype* col_g = col + static_cast<size_t>(kernel_dim_) * columns * g;
    for (int j = 0; j < columns; j += block) {
      cpu_gemm<Dtype>(Trans::kYes, Trans::kNo, kernel_dim_, std::min(block, columns - j), m,
                      Dtype(1), w, kernel_dim_, out_g + j, columns, Dtype(0), col_g + j, columns);
    }
  }
  if (!direct) conv_col2im_cpu(col, count, input);
}

template <typename Dtype>
void BaseConvolutionLayer<Dtype>::weight_cpu_gemm(const Dtype* input, const Dtype* output,
                                                  int count, Dtype* weights, int part,
                                                  bool skip_im2col) {
  const bool single = count == 1;
  const int columns = count * conv_out_spatial_dim_;
  const Dtype* col = input;
  if (!(is_1x1_ && single)) {
    Dtype* buffer = col_data_ + col_part_size_ * part;
    if (!skip_im2col) conv_im2col_cpu(input, count, buffer);
    col = buffer;
  }
  const int m = conv_out_channels_ / group_;
  if (weight_t_) {
    // weights (transposed, kernel_dim_ x m per group) += col * output^T, over blocks of
    // positions; output^T is positions x conv_out_channels_.
    Dtype* output_t = top_t_data_ + top_t_part_size_ * part;
    Transpose(output, conv_out_channels_, columns, output_t);
    for (int g = 0; g < group_; ++g) {
      const Dtype* col_g = col + static_cast<size_t>(kernel_dim_) * columns * g;
      Dtype* w_g = weights + static_cast<size_t>(weight_offset_) * g;
      for (int j = 0; j < columns; j += block_) {
        cpu_gemm<Dtype>(Trans::kNo, Trans::kNo, kernel_dim_, m, std::min(block_, columns - j),
                        Dtype(1), col_g + j, columns,
                        output_t + static_cast<size_t>(j) * conv_out_channels_ + m * g,
                        conv_out_channels_, Dtype(1), w_g, m);
      }
    }
    return;
  }
  const Dtype* out = output;
  if (!single) {
    Dtype* gathered = gather_data_ + gather_part_size_ * part;
    gather_output(output, count, gathered);
    out = gathered;
  }
  const int block = block_ ? block_ : columns;
  for (int g = 0; g < group_; ++g) {
    const Dtype* out_g = out + static_cast<size_t>(m) * columns * g;
    const Dtype* col_g = col + static_cast<size_t>(kernel_dim_) * columns * g;
    Dtype* w_g = weights + static_cast<size_t>(weight_offset_) * g;
    for (int j = 0; j < columns; j += block) {
      cpu_gemm<Dtype>(Trans::kNo, Trans::kYes, m, kernel_dim_, std::min(block, columns - j),
                      Dtype(1), out_g + j, columns, col_g + j, columns, Dtype(1), w_g, kernel_dim_);
    }
  }
}

template <typename Dtype>
void BaseConvolutionLayer<Dtype>::forward_cpu_bias(Dtype* output, const Dtype* bias) {
  cpu_gemm<Dtype>(Trans::kNo, Trans::kNo, num_output_, out_spatial_dim_, 1, Dtype(1), bias,
                  bias_multiplier_data_, Dtype(1), output);
}

template <typename Dtype>
void BaseConvolutionLayer<Dtype>::backward_cpu_bias(Dtype* bias, const Dtype* output) {
  cpu_gemv<Dtype>(Trans::kNo, num_output_, out_spatial_dim_, Dtype(1), output,
                  bias_multiplier_data_, Dtype(1), bias);
}

template <typename Dtype>
void BaseConvolutionLayer<Dtype>::Forward_cpu(const BlobVec& bottom, const BlobVec& top) {
  if (num_ == 0) return;  // an empty batch has no buffers to touch
  const Dtype* weight = this->blobs_[0]->cpu_data();
  const Dtype* bias = bias_term_ ? this->blobs_[1]->cpu_data() : nullptr;
  const bool reverse = reverse_dimensions();
  const int chunk = images_per_gemm();
  const int chunks = num_chunks();
  prepare_parts(ParallelPartsFor(chunks, 1));
  for (size_t i = 0; i < bottom.size(); ++i) {
    const Dtype* bottom_data = bottom[i]->cpu_data();
    Dtype* top_data = top[i]->mutable_cpu_data();
    ParallelFor(chunks, 1, [&](int begin, int end, int part) {
      for (int c = begin; c < end; ++c) {
        const int n = c * chunk;
        const int count = std::min(chunk, num_ - n);
        const Dtype* in = bottom_data + static_cast<size_t>(n) * bottom_dim_;
        Dtype* out = top_data + static_cast<size_t>(n) * top_dim_;
        if (reverse) {
          backward_cpu_gemm(in, count, weight, out, part);
        } else {
          forward_cpu_gemm(in, count, weight, out, part);
        }
        if (!bias) continue;
        for (int b = 0; b < count; ++b)
          forward_cpu_bias(out + static_cast<size_t>(b) * top_dim_, bias);
      }
    });
  }
}

template <typename Dtype>
void BaseConvolutionLayer<Dtype>::Backward_cpu(const BlobVec& top,
                                               const std::vector<bool>& propagate_down,
                                               const BlobVec& bottom) {
  if (num_ == 0) return;
  const Dtype* weight = this->blobs_[0]->cpu_data();
  const bool weight_grad = this->param_propagate_down(0);
  const bool bias_grad = bias_term_ && this->param_propagate_down(1);
  const bool reverse = reverse_dimensions();
  const int chunk = images_per_gemm();
  const int chunks = num_chunks();
  const int parts = ParallelPartsFor(chunks, 1);
  prepare_parts(parts);
  prepare_param_diffs(parts, weight_grad ? this->blobs_[0]->mutable_cpu_diff() : nullptr,
                      bias_grad ? this->blobs_[1]->mutable_cpu_diff() : nullptr);
  for (size_t i = 0; i < top.size(); ++i) {
    if (!weight_grad && !bias_grad && !propagate_down[i]) continue;
    const Dtype* top_diff = top[i]->cpu_diff();
    const Dtype* bottom_data = bottom[i]->cpu_data();
    Dtype* bottom_diff = propagate_down[i] ? bottom[i]->mutable_cpu_diff() : nullptr;
    ParallelFor(chunks, 1, [&](int begin, int end, int part) {
      Dtype* weight_diff = param_diff_part(0, part);
      Dtype* bias_diff = param_diff_part(1, part);
      for (int c = begin; c < end; ++c) {
        const int n = c * chunk;
        const int count = std::min(chunk, num_ - n);
        const Dtype* x = bottom_data + static_cast<size_t>(n) * bottom_dim_;
        const Dtype* dy = top_diff + static_cast<size_t>(n) * top_dim_;
        Dtype* dx = bottom_diff ? bottom_diff + static_cast<size_t>(n) * bottom_dim_ : nullptr;
        if (bias_diff) {
          for (int b = 0; b < count; ++b) {
            backward_cpu_bias(bias_diff, dy + static_cast<size_t>(b) * top_dim_);
          }
        }
        if (weight_diff) {
          // The convolution's input side is the bottom, or the top for a deconvolution.
          if (reverse) {
            weight_cpu_gemm(dy, x, count, weight_diff, part);
          } else {
            weight_cpu_gemm(x, dy, count, weight_diff, part);
          }
        }
        if (!dx) continue;
        // The weight gradient left this chunk's top diff gathered (convolution) or its
        // im2col in the column buffer (deconvolution): reuse it.
        if (reverse) {
          forward_cpu_gemm(dy, count, weight, dx, part, weight_diff != nullptr);
        } else {
          backward_cpu_gemm(dy, count, weight, dx, part, weight_diff != nullptr);
        }
      }
    });
  }
  reduce_param_diffs(parts);
}

DOPPIO_INSTANTIATE_CLASS(BaseConvolutionLayer);

}  // namespace doppio
