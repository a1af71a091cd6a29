#include "doppio/layers/conv_geometry.hpp"

#include <cstdint>

#include "doppio/core/blob.hpp"

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

ConvGeometry ReadConvGeometry(const std::string& who, const ConvolutionParameter& p,
                              const std::vector<int>& input_shape) {
  ConvGeometry g;
  DOPPIO_ENSURE(!p.force_nd_im2col())
      << who << ": convolution_param.force_nd_im2col is not supported (only 2-d im2col)";

  const int num_axes = static_cast<int>(input_shape.size());
  DOPPIO_ENSURE(p.axis() >= -num_axes && p.axis() < num_axes)
      << who << ": convolution_param.axis " << p.axis() << " is out of range for input shape "
      << ShapeString(input_shape);
  g.channel_axis = p.axis() < 0 ? p.axis() + num_axes : p.axis();

  if (!ReadSpatialField(who, "kernel", "kernel_size", p.kernel_size(), p.has_kernel_h(),
                        p.has_kernel_w(), p.kernel_h(), p.kernel_w(), &g.kernel_h, &g.kernel_w)) {
    DOPPIO_FAIL() << who
                  << ": convolution_param.kernel_size (or kernel_h and kernel_w) is required";
  }
  if (!ReadSpatialField(who, "stride", "stride", p.stride(), p.has_stride_h(), p.has_stride_w(),
                        p.stride_h(), p.stride_w(), &g.stride_h, &g.stride_w)) {
    g.stride_h = g.stride_w = 1;
  }
  if (!ReadSpatialField(who, "pad", "pad", p.pad(), p.has_pad_h(), p.has_pad_w(), p.pad_h(),
                        p.pad_w(), &g.pad_h, &g.pad_w)) {
    g.pad_h = g.pad_w = 0;
  }
  if (!ReadSpatialField(who, "dilation", "dilation", p.dilation(), false, false, 0, 0,
                        &g.dilation_h, &g.dilation_w)) {
    g.dilation_h = g.dilation_w = 1;
  }
  const int num_spatial_axes = num_axes - g.channel_axis - 1;
  DOPPIO_ENSURE(num_spatial_axes == 2)
      << who << ": input shape " << ShapeString(input_shape) << " with convolution_param.axis "
      << p.axis() << " has " << num_spatial_axes
      << " spatial axes, but only 2-d convolution is supported";
  DOPPIO_ENSURE(g.kernel_h > 0 && g.kernel_w > 0)
      << who << ": convolution_param kernel size must be positive, got " << g.kernel_h << "x"
      << g.kernel_w;
  DOPPIO_ENSURE(g.stride_h > 0 && g.stride_w > 0)
      << who << ": convolution_param stride must be positive, got " << g.stride_h << "x"
      << g.stride_w;
  DOPPIO_ENSURE(g.dilation_h > 0 && g.dilation_w > 0)
      << who << ": convolution_param.dilation must be positive, got " << g.dilation_h << "x"
      << g.dilation_w;
  return g;
}

}  // namespace doppio
