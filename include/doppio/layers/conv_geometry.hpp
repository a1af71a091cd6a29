#pragma once

#include <string>
#include <vector>

#include "doppio/core/common.hpp"

namespace doppio {

// The 2-d window a convolution_param describes, as Convolution, Deconvolution and Im2col read
// it: the channel axis of an input of shape input_shape, and kernel, stride, pad and dilation
// (each given once for both axes, per axis, or as the _h/_w pair).
struct ConvGeometry {
  int channel_axis = 1;
  int kernel_h = 0, kernel_w = 0;
  int stride_h = 1, stride_w = 1;
  int pad_h = 0, pad_w = 0;
  int dilation_h = 1, dilation_w = 1;
};

// Throws Error naming `who` and the field for what Doppio cannot run (N-d im2col, an axis
// out of range, other than 2 spatial axes, a non-positive kernel, stride or dilation) and for
// a missing kernel size.
ConvGeometry ReadConvGeometry(const std::string& who, const ConvolutionParameter& param,
                              const std::vector<int>& input_shape);

}  // namespace doppio
