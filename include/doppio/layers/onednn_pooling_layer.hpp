#pragma once

#ifdef DOPPIO_WITH_ONEDNN

#include <string>
#include <vector>

#include "doppio/layers/onednn_layer.hpp"
#include "doppio/layers/onednn_tensor.hpp"
#include "doppio/layers/pooling_layer.hpp"

namespace doppio {

// MAX and AVE pooling on oneDNN (engine ONEDNN, float), with Caffe's output shape: the
// CAFFE layer's Reshape sizes the top, and oneDNN is given the right padding that makes its
// windows those of Caffe's ceil (or floor) rule. It runs in the layout its input arrives in
// (a oneDNN layer's blocked one, or Caffe's), with primitives made for that layout on the
// first Forward that sees it, and leaves its output and the bottom diff in that layout. Two cases
// keep the CAFFE kernels, so that results stay Caffe's exactly:
// - MAX over an input holding a NaN (checked every Forward): Caffe's MAX outputs NaN for a
//   window holding one and routes its gradient to the window's last NaN; oneDNN's does not.
// - AVE where the input is padded and a ceil-mode window also overhangs the padding: Caffe
//   divides by the window clipped to the padded input, which neither of oneDNN's divisors
//   (the whole window, the part inside the image) is. Logged once per shape.
class OnednnPoolingLayer : public OnednnLayer<PoolingLayer<float>> {
 public:
  explicit OnednnPoolingLayer(const LayerParameter& param) : OnednnLayer(param) {}
  void Reshape(const BlobVec& bottom, const BlobVec& top) override;

  // Why the engine cannot run a configuration ("" when it can), for the registry.
  static std::string Unsupported(const LayerParameter& param);

 protected:
  bool RunsBf16() const override { return true; }
  void Forward_cpu(const BlobVec& bottom, const BlobVec& top) override;
  void Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override;

 private:
  dnnl::memory::dims RightPadding() const;
  // Whether a ceil-mode window reaches past the left padding's mirror on the right.
  bool Overhangs() const;
  // The primitives for an input in layout `src` (Caffe's, or the oneDNN one it arrives in).
  void Prepare(const dnnl::memory::desc& src);

  std::vector<int> prepared_shape_;
  dnnl::memory::desc prepared_src_;
  // This shape runs the CAFFE kernels (see the class comment).
  bool caffe_shape_ = false;
  // The last Forward ran the CAFFE kernels, so Backward must too.
  bool caffe_pass_ = false;
  dnnl::pooling_forward forward_;
  dnnl::pooling_backward backward_;
  OnednnTensor src_, dst_, diff_dst_, diff_src_;
  dnnl::memory workspace_;
};

}  // namespace doppio

#endif  // DOPPIO_WITH_ONEDNN
