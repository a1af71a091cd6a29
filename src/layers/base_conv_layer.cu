#include "doppio/core/layer_kernels.cuh"
#include "doppio/device/im2col_gpu.hpp"
#include "doppio/layers/base_conv_layer.hpp"
#include "doppio/util/im2col.hpp"
#include "doppio/util/math_functions.hpp"

namespace doppio {

namespace {
template <typename Dtype>
__global__ void AddChannelBias(long long n, int channels, int spatial, const Dtype* bias,
                               Dtype* out) {
  DOPPIO_KERNEL_LOOP(i, n) { out[i] += bias[(i / spatial) % channels]; }
}
}  // namespace

template <typename Dtype>
Dtype* BaseConvolutionLayer<Dtype>::col_buffer_gpu() {
  // The column matrix lives only while the layer runs, so all convolutions share the
  // context's workspace (Caffe keeps one per layer: their sum on the device).
  const size_t count = static_cast<size_t>(kernel_dim_) * group_ * conv_out_spatial_dim_;
  return static_cast<Dtype*>(this->gpu().Workspace(count * sizeof(Dtype)));
}

template <typename Dtype>
const Dtype* BaseConvolutionLayer<Dtype>::conv_columns_gpu(const Dtype* input) {
  if (is_1x1_) return input;
  GpuContext& gpu = this->gpu();
  Dtype* buffer = col_buffer_gpu();
  im2col_gpu(gpu, input, conv_in_channels_, conv_input_shape_[0], conv_input_shape_[1], kernel_h_,
             kernel_w_, pad_h_, pad_w_, stride_h_, stride_w_, dilation_h_, dilation_w_, buffer);
  return buffer;
}

template <typename Dtype>
void BaseConvolutionLayer<Dtype>::forward_gpu_gemm(const Dtype* input, const Dtype* weights,
                                                   Dtype* output) {
  GpuContext& gpu = this->gpu();
  const Dtype* col = conv_columns_gpu(input);
  const int m = conv_out_channels_ / group_;
  const long long col_offset = static_cast<long long>(kernel_dim_) * conv_out_spatial_dim_;
  const long long out_offset = static_cast<long long>(m) * conv_out_spatial_dim_;
  for (int g = 0; g < group_; ++g) {
    gpu_gemm<Dtype>(gpu, Trans::kNo, Trans::kNo, m, conv_out_spatial_dim_, kernel_dim_, Dtype(1),
                    weights + static_cast<long long>(weight_offset_) * g, col + col_offset * g,
                    Dtype(0), output + out_offset * g);
  }
}

template <typename Dtype>
void BaseConvolutionLayer<Dtype>::backward_gpu_gemm(const Dtype* output, const Dtype* weights,
                                                    Dtype* input) {
  GpuContext& gpu = this->gpu();
  Dtype* col = is_1x1_ ? input : col_buffer_gpu();
  const int m = conv_out_channels_ / group_;
  const long long col_offset = static_cast<long long>(kernel_dim_) * conv_out_spatial_dim_;
  const long long out_offset = static_cast<long long>(m) * conv_out_spatial_dim_;
  for (int g = 0; g < group_; ++g) {
    gpu_gemm<Dtype>(gpu, Trans::kYes, Trans::kNo, kernel_dim_, conv_out_spatial_dim_, m, Dtype(1),
                    weights + static_cast<long long>(weight_offset_) * g, output + out_offset * g,
                    Dtype(0), col + col_offset * g);
  }
  if (!is_1x1_) {
    col2im_gpu(gpu, static_cast<const Dtype*>(col), conv_in_channels_, conv_input_shape_[0],
               conv_input_shape_[1], kernel_h_, kernel_w_, pad_h_, pad_w_, stride_h_, stride_w_,
               dilation_h_, dilation_w_, input);
  }
}

template <typename Dtype>
void BaseConvolutionLayer<Dtype>::weight_gpu_gemm(const Dtype* input, const Dtype* output,
                                                  Dtype* weights) {
  GpuContext& gpu = this->gpu();
  const Dtype* col = conv_columns_gpu(input);
  const int m = conv_out_channels_ / group_;
  const long long col_offset = static_cast<long long>(kernel_dim_) * conv_out_spatial_dim_;
  const long long out_offset = static_cast<long long>(m) * conv_out_spatial_dim_;
  for (int g = 0; g < group_; ++g) {
    gpu_gemm<Dtype>(gpu, Trans::kNo, Trans::kYes, m, kernel_dim_, conv_out_spatial_dim_, Dtype(1),
                    output + out_offset * g, col + col_offset * g, Dtype(1),
                    weights + static_cast<long long>(weight_offset_) * g);
  }
}

template <typename Dtype>
void BaseConvolutionLayer<Dtype>::forward_gpu_bias(Dtype* output, const Dtype* bias) {
  const long long n = static_cast<long long>(num_) * num_output_ * out_spatial_dim_;
  LaunchKernel("AddChannelBias", this->gpu(), n, AddChannelBias<Dtype>, n, num_output_,
               out_spatial_dim_, bias, output);
}

template <typename Dtype>
void BaseConvolutionLayer<Dtype>::backward_gpu_bias(Dtype* bias, const Dtype* output) {
  ChannelSum(this->gpu(), num_, num_output_, out_spatial_dim_, ProductTerm<Dtype>{output, nullptr},
             Dtype(1), bias);
}

template <typename Dtype>
void BaseConvolutionLayer<Dtype>::Forward_gpu(const BlobVec& bottom, const BlobVec& top) {
  if (num_ == 0) return;
  GpuContext& gpu = this->gpu();
  const Dtype* weight = this->blobs_[0]->gpu_data(gpu);
  const bool reverse = reverse_dimensions();
  for (size_t i = 0; i < bottom.size(); ++i) {
    const Dtype* bottom_data = bottom[i]->gpu_data(gpu);
    Dtype* top_data = top[i]->mutable_gpu_data(gpu);
    for (int n = 0; n < num_; ++n) {
      const Dtype* in = bottom_data + static_cast<size_t>(n) * bottom_dim_;
      Dtype* out = top_data + static_cast<size_t>(n) * top_dim_;
      if (reverse) {
        backward_gpu_gemm(in, weight, out);
      } else {
        forward_gpu_gemm(in, weight, out);
      }
    }
    if (bias_term_) forward_gpu_bias(top_data, this->blobs_[1]->gpu_data(gpu));
  }
}

template <typename Dtype>
void BaseConvolutionLayer<Dtype>::Backward_gpu(const BlobVec& top,
                                               const std::vector<bool>& propagate_down,
                                               const BlobVec& bottom) {
  if (num_ == 0) return;
  GpuContext& gpu = this->gpu();
  const Dtype* weight = this->blobs_[0]->gpu_data(gpu);
  const bool weight_grad = this->param_propagate_down(0);
  const bool bias_grad = bias_term_ && this->param_propagate_down(1);
  const bool reverse = reverse_dimensions();
  Dtype* weight_diff = weight_grad ? this->blobs_[0]->mutable_gpu_diff(gpu) : nullptr;
  Dtype* bias_diff = bias_grad ? this->blobs_[1]->mutable_gpu_diff(gpu) : nullptr;
  for (size_t i = 0; i < top.size(); ++i) {
    const Dtype* top_diff = top[i]->gpu_diff(gpu);
    if (bias_grad) backward_gpu_bias(bias_diff, top_diff);
    if (!weight_grad && !propagate_down[i]) continue;
    const Dtype* bottom_data = bottom[i]->gpu_data(gpu);
    Dtype* bottom_diff = propagate_down[i] ? bottom[i]->mutable_gpu_diff(gpu) : nullptr;
    for (int n = 0; n < num_; ++n) {
      const Dtype* x = bottom_data + static_cast<size_t>(n) * bottom_dim_;
      const Dtype* dy = top_diff + static_cast<size_t>(n) * top_dim_;
      if (weight_grad) {
        // The convolution's input side is the bottom, or the top for a deconvolution.
        if (reverse) {
          weight_gpu_gemm(dy, x, weight_diff);
        } else {
          weight_gpu_gemm(x, dy, weight_diff);
        }
      }
      if (!bottom_diff) continue;
      Dtype* dx = bottom_diff + static_cast<size_t>(n) * bottom_dim_;
      if (reverse) {
        forward_gpu_gemm(dy, weight, dx);
      } else {
        backward_gpu_gemm(dy, weight, dx);
      }
    }
  }
}

#define DOPPIO_INSTANTIATE_BASE_CONV_GPU(Dtype)                                                    \
  template void BaseConvolutionLayer<Dtype>::forward_gpu_gemm(const Dtype*, const Dtype*, Dtype*); \
  template void BaseConvolutionLayer<Dtype>::backward_gpu_gemm(const Dtype*, const Dtype*,         \
                                                               Dtype*);                            \
  template void BaseConvolutionLayer<Dtype>::weight_gpu_gemm(const Dtype*, const Dtype*, Dtype*);  \
  template void BaseConvolutionLayer<Dtype>::forward_gpu_bias(Dtype*, const Dtype*);               \
  template void BaseConvolutionLayer<Dtype>::backward_gpu_bias(Dtype*, const Dtype*);

DOPPIO_INSTANTIATE_BASE_CONV_GPU(float)
DOPPIO_INSTANTIATE_BASE_CONV_GPU(double)
DOPPIO_INSTANTIATE_LAYER_GPU_FUNCS(BaseConvolutionLayer);

}  // namespace doppio
