#pragma once

#ifdef DOPPIO_WITH_ONEDNN

#include <cstdint>
#include <string>
#include <vector>

#include "doppio/layers/conv_layer.hpp"
#include "doppio/layers/onednn_fusion.hpp"
#include "doppio/layers/onednn_layer.hpp"
#include "doppio/layers/onednn_params.hpp"

namespace doppio {

template <typename Dtype>
class Net;

// Convolution on oneDNN (engine ONEDNN, float): one primitive per direction for the whole
// batch and every group, created when the bottom's shape changes (Reshape; the backward ones
// on the first Backward for a shape). oneDNN picks the activations' and weights' layouts: the
// output and the bottom diff stay in the primitive's layout in the blob's buffer where that
// takes Caffe's bytes (OnednnTensor::Write), else are reordered to NCHW; an input arriving
// in the primitive's layout is read as it is. The weights are reordered into oneDNN's layout
// at each call, or kept while nothing writes them in a TEST net (OnednnParamData). Winograd's
// algorithm runs where oneDNN has a jit kernel for the shape and its scratchpad is within the
// net's limit (LimitWinograd), unless CpuOptions::onednn_winograd is off. On the GPU it is the
// CAFFE ConvolutionLayer. An in-place ReLU after it can run as its post-op (OnednnReLUFusable):
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
  // The scratchpad Winograd's forward takes for this shape (0 where oneDNN has no Winograd
  // kernel for it), and the most it may take: over the limit the layer runs the direct
  // algorithm (LimitWinograd prepares it again). A net sets the limit once its layers are set
  // up (LimitWinogradScratchpads in the source says how much).
  std::size_t winograd_scratchpad_bytes() const { return winograd_scratchpad_bytes_; }
  void LimitWinograd(std::size_t scratchpad_bytes);

 protected:
  bool RunsBf16() const override { return true; }
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
  // oneDNN tells a primitive's scratchpad size only to a caller who provides the scratchpad
  // (scratchpad_mode::user); the primitives that run leave it to oneDNN, whose one scratchpad
  // for every primitive took less memory than placing each in the layers' workspace (GoogLeNet
  // batch 8: 796 against 808 MiB).
  dnnl::convolution_forward::primitive_desc ForwardPrimitive(
      dnnl::algorithm algorithm, bool without_relu = false,
      dnnl::scratchpad_mode scratchpad = dnnl::scratchpad_mode::library) const;
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
  std::size_t winograd_scratchpad_bytes_ = 0;
  std::size_t winograd_limit_ = SIZE_MAX;

  dnnl::convolution_forward::primitive_desc forward_pd_;
  dnnl::convolution_forward forward_;
  // The fused forward without its post-op, made when an output first may hold a NaN.
  dnnl::convolution_forward forward_without_relu_;
  OnednnTensor src_, dst_;
  OnednnParamData weights_, bias_;
  OnednnParamMagnitude weights_magnitude_, bias_magnitude_;

  dnnl::convolution_backward_data backward_data_;
  OnednnTensor data_diff_dst_, diff_src_;
  OnednnParamData data_weights_;
  dnnl::convolution_backward_weights backward_weights_;
  OnednnTensor weights_src_, weights_diff_dst_;
  OnednnParamGradient diff_weights_, diff_bias_;
  // Both backward primitives want the top diff in the same layout: it is reordered once.
  bool share_diff_dst_ = false;
  // Backward data wants the weights in the forward's layout (Winograd's 3x3 kernels): it reads
  // them through the forward's OnednnParamData, a TEST net's kept copy included.
  bool share_weights_ = false;
};

// Sets every oneDNN convolution's LimitWinograd from the net's size, once its layers are set
// up (the first of the oneDNN engine's passes, layers/onednn_fusion.cpp).
void LimitWinogradScratchpads(const Net<float>& net);

}  // namespace doppio

#endif  // DOPPIO_WITH_ONEDNN
