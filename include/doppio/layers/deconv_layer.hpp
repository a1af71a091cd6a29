#pragma once

#include "doppio/layers/base_conv_layer.hpp"

namespace doppio {

// 2-d deconvolution (transposed convolution, Caffe's "Deconvolution"): forward is the
// backward pass of a Convolution with the same parameters. Weights have shape
// (channels, num_output / group, kernel_h, kernel_w), as in Caffe; the spatial output size is
// stride * (in - 1) + dilation * (kernel - 1) + 1 - 2 * pad.
template <typename Dtype>
class DeconvolutionLayer : public BaseConvolutionLayer<Dtype> {
 public:
  using typename BaseConvolutionLayer<Dtype>::BlobVec;
  explicit DeconvolutionLayer(const LayerParameter& param) : BaseConvolutionLayer<Dtype>(param) {}
  const char* type() const override { return "Deconvolution"; }

 protected:
  void compute_output_shape() override;
  bool reverse_dimensions() const override { return true; }
};

}  // namespace doppio
