#include "doppio/layers/conv_layer.hpp"

#include "doppio/core/layer_registry.hpp"

namespace doppio {

template <typename Dtype>
void ConvolutionLayer<Dtype>::compute_output_shape() {
  const int kernel[2] = {this->kernel_h_, this->kernel_w_};
  const int pad[2] = {this->pad_h_, this->pad_w_};
  const int stride[2] = {this->stride_h_, this->stride_w_};
  const int dilation[2] = {this->dilation_h_, this->dilation_w_};
  const char* axis_name[2] = {"height", "width"};
  this->output_shape_.resize(2);
  for (int i = 0; i < 2; ++i) {
    const int in = this->input_shape_[i];
    const int extent = dilation[i] * (kernel[i] - 1) + 1;
    DOPPIO_ENSURE(in + 2 * pad[i] >= extent)
        << this->Describe() << ": kernel " << axis_name[i] << " " << extent
        << (dilation[i] > 1 ? " (dilated)" : "") << " is larger than the padded input "
        << axis_name[i] << " " << in << " + 2 * " << pad[i] << " = " << in + 2 * pad[i];
    this->output_shape_[i] = (in + 2 * pad[i] - extent) / stride[i] + 1;
  }
}

DOPPIO_INSTANTIATE_CLASS(ConvolutionLayer);
REGISTER_LAYER_CLASS(Convolution);

}  // namespace doppio
