#pragma once

#ifdef DOPPIO_WITH_ONEDNN

#include <string>
#include <vector>

#include "doppio/layers/conv_layer.hpp"
#include "doppio/layers/onednn_fusion.hpp"
#include "doppio/layers/onednn_layer.hpp"
#include "doppio/layers/onednn_params.hpp"

namespace doppio {

// Convolution on oneDNN (engine ONEDNN, float): one primitive per direction for the whole
// batch and every group, created when the bottom's shape changes (Reshape; the backward ones
// on the first Backward for a shape). oneDNN picks the activations' and weights' layouts: the
// output and the bottom diff stay in the primitive's layout in the blob's buffer where that
// takes Caffe's bytes (OnednnTensor::Write), else are reordered to NCHW; an input arriving
// in the primitive's layout is read as it is. The weights in oneDNN's layout are cached until
// the parameters are written again. Winograd's algorithm runs where oneDNN has a jit kernel
// for the shape, unless CpuOptions::onednn_winograd is off. On the GPU it is the CAFFE
// ConvolutionLayer. An in-place ReLU after it can run as its post-op (OnednnReLUFusable):
// before each Forward the largest magnitudes of the input, weights and bias bound the output,
// and where that bound allows a NaN (an input or parameter that is not finite, or an output
// that could overflow) a second primitive without the post-op runs, and Caffe's ReLU after it.
class OnednnConvolutionLayer : public OnednnLayer<ConvolutionLayer<float>>,
                               public OnednnReLUFusable {
 public:
  explicit OnednnConvolutionLayer(const LayerParameter& param) : OnednnLayer(param) {}
  void Reshape(const BlobVec& bottom, const BlobVec& top) override;

  // Why the engine cannot run a configuration ("" when it can), for the registry.
  static std::string Unsupported(const LayerParameter& param);

  bool CanFuseReLU() const override { return top_count_ == 1; }
  // Whether the primitives run Winograd's algorithm (else the direct one).
  bool winograd() const { return algorithm_ == dnnl::algorithm::convolution_winograd; }

 protected:
  void Forward_cpu(const BlobVec& bottom, const BlobVec& top) override;
  void Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override;

 private:
  struct Shapes {
    dnnl::memory::dims src, weights, bias, dst, strides, dilates, pad_l, pad_r;
  };
  Shapes ConvShapes() const;
  // The forward primitive in `algorithm` with the post-op where one is fused, its tensors in the
  // layouts oneDNN prefers; or, `without_relu`, the same primitive as forward_pd_ without it.
  dnnl::convolution_forward::primitive_desc ForwardPrimitive(dnnl::algorithm algorithm,
                                                             bool without_relu = false) const;
  // Whether the output may hold a NaN, which the ReLU post-op would make 0.
  bool OutputMayHoldNaN(const BlobVec& bottom);
  void PrepareForward();
  void PrepareBackward();
  void RecreateForward() override;

  std::vector<int> prepared_shape_;
  bool backward_prepared_ = false;
  int top_count_ = 0;
  dnnl::algorithm algorithm_ = dnnl::algorithm::convolution_direct;
  bool winograd_logged_ = false;

  dnnl::convolution_forward::primitive_desc forward_pd_;
  dnnl::convolution_forward forward_;
  // The fused forward without its post-op, made when an output first may hold a NaN.
  dnnl::convolution_forward forward_without_relu_;
  OnednnTensor src_, dst_;
  OnednnCachedParam weights_, bias_;
  OnednnParamMagnitude weights_magnitude_, bias_magnitude_;

  dnnl::convolution_backward_data backward_data_;
  OnednnTensor data_diff_dst_, diff_src_;
  OnednnCachedParam data_weights_;
  dnnl::convolution_backward_weights backward_weights_;
  OnednnTensor weights_src_, weights_diff_dst_;
  OnednnParamGradient diff_weights_, diff_bias_;
  // Both backward primitives want the top diff in the same layout: it is reordered once.
  bool share_diff_dst_ = false;
  // Backward data wants the weights in the forward's layout (Winograd's 3x3 kernels): it reads
  // the forward's cached copy, and the weights are reordered once per update, not twice.
  bool share_weights_ = false;
};

}  // namespace doppio

#endif  // DOPPIO_WITH_ONEDNN
