#include "doppio/layers/deconv_layer.hpp"

#include "doppio/core/layer_registry.hpp"

namespace doppio {

template <typename Dtype>
void DeconvolutionLayer<Dtype>::compute_output_shape() {
  const int kernel[2] = {this->kernel_h_, this->kernel_w_};
  const int pad[2] = {this->pad_h_, this->pad_w_};
  const int stride[2] = {this->stride_h_, this->stride_w_};
  const int dilation[2] = {this->dilation_h_, this->dilation_w_};
  const char* axis_name[2] = {"height", "width"};
  this->output_shape_.resize(2);
  for (int i = 0; i < 2; ++i) {
    const int in = this->input_shape_[i];
    const int extent = dilation[i] * (kernel[i] - 1) + 1;
    const int out = stride[i] * (in - 1) + extent - 2 * pad[i];
    DOPPIO_ENSURE(out > 0) << this->Describe() << ": output " << axis_name[i] << " " << stride[i]
                           << " * (" << in << " - 1) + " << extent << " - 2 * " << pad[i] << " = "
                           << out << " is not positive; the padding is too large";
    this->output_shape_[i] = out;
  }
}

DOPPIO_INSTANTIATE_CLASS(DeconvolutionLayer);
REGISTER_LAYER_CLASS(Deconvolution);

}  // namespace doppio
