#pragma once

#include "doppio/layers/base_conv_layer.hpp"

namespace doppio {

// 2-d convolution (Caffe's "Convolution"): each bottom is convolved with the same filters.
// Weights have shape (num_output, channels / group, kernel_h, kernel_w); the spatial output
// size is (in + 2 * pad - (dilation * (kernel - 1) + 1)) / stride + 1.
template <typename Dtype>
class ConvolutionLayer : public BaseConvolutionLayer<Dtype> {
 public:
  using typename BaseConvolutionLayer<Dtype>::BlobVec;
  explicit ConvolutionLayer(const LayerParameter& param) : BaseConvolutionLayer<Dtype>(param) {}
  const char* type() const override { return "Convolution"; }

 protected:
  void compute_output_shape() override;
  bool reverse_dimensions() const override { return false; }
};

}  // namespace doppio
