#include "doppio/layers/im2col_layer.hpp"

#include "doppio/core/layer_registry.hpp"
#include "doppio/layers/conv_geometry.hpp"
#include "doppio/util/im2col.hpp"

namespace doppio {

template <typename Dtype>
void Im2colLayer<Dtype>::LayerSetUp(const BlobVec& bottom, const BlobVec& top) {
  const ConvolutionParameter& p = this->layer_param_.convolution_param();
  const ConvGeometry g = ReadConvGeometry(this->Describe(), p, bottom[0]->shape());
  channel_axis_ = g.channel_axis;
  kernel_h_ = g.kernel_h;
  kernel_w_ = g.kernel_w;
  stride_h_ = g.stride_h;
  stride_w_ = g.stride_w;
  pad_h_ = g.pad_h;
  pad_w_ = g.pad_w;
  dilation_h_ = g.dilation_h;
  dilation_w_ = g.dilation_w;
}

template <typename Dtype>
void Im2colLayer<Dtype>::Reshape(const BlobVec& bottom, const BlobVec& top) {
  const Blob<Dtype>& in = *bottom[0];
  DOPPIO_ENSURE(in.num_axes() == channel_axis_ + 3)
      << this->Describe() << ": input shape " << in.shape_string()
      << " does not have 2 spatial axes after the channel axis " << channel_axis_;
  num_ = in.count(0, channel_axis_);
  channels_ = in.shape(channel_axis_);
  height_ = in.shape(channel_axis_ + 1);
  width_ = in.shape(channel_axis_ + 2);
  const int out_h = ConvOutputSize(height_, kernel_h_, pad_h_, stride_h_, dilation_h_);
  const int out_w = ConvOutputSize(width_, kernel_w_, pad_w_, stride_w_, dilation_w_);
  DOPPIO_ENSURE(out_h > 0 && out_w > 0)
      << this->Describe() << ": input " << in.shape_string() << " is smaller than the " << kernel_h_
      << "x" << kernel_w_ << " kernel (with its padding and dilation)";
  std::vector<int> shape(in.shape().begin(), in.shape().begin() + channel_axis_);
  shape.push_back(channels_ * kernel_h_ * kernel_w_);
  shape.push_back(out_h);
  shape.push_back(out_w);
  top[0]->Reshape(shape);
  bottom_dim_ = in.count(channel_axis_);
  top_dim_ = top[0]->count(channel_axis_);
}

template <typename Dtype>
void Im2colLayer<Dtype>::Forward_cpu(const BlobVec& bottom, const BlobVec& top) {
  const Dtype* in = bottom[0]->cpu_data();
  Dtype* out = top[0]->mutable_cpu_data();
  for (int n = 0; n < num_; ++n) {
    im2col_cpu(in + static_cast<long long>(n) * bottom_dim_, channels_, height_, width_, kernel_h_,
               kernel_w_, pad_h_, pad_w_, stride_h_, stride_w_, dilation_h_, dilation_w_,
               out + static_cast<long long>(n) * top_dim_);
  }
}

template <typename Dtype>
void Im2colLayer<Dtype>::Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                                      const BlobVec& bottom) {
  if (!propagate_down[0]) return;
  const Dtype* top_diff = top[0]->cpu_diff();
  Dtype* bottom_diff = bottom[0]->mutable_cpu_diff();
  for (int n = 0; n < num_; ++n) {
    col2im_cpu(top_diff + static_cast<long long>(n) * top_dim_, channels_, height_, width_,
               kernel_h_, kernel_w_, pad_h_, pad_w_, stride_h_, stride_w_, dilation_h_, dilation_w_,
               bottom_diff + static_cast<long long>(n) * bottom_dim_);
  }
}

DOPPIO_INSTANTIATE_CLASS(Im2colLayer);
REGISTER_LAYER_CLASS(Im2col);

}  // namespace doppio
