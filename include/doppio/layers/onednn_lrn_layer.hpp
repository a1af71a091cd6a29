#pragma once

#ifdef DOPPIO_WITH_ONEDNN

#include <vector>

#include "doppio/layers/lrn_layer.hpp"
#include "doppio/layers/onednn_layer.hpp"
#include "doppio/layers/onednn_tensor.hpp"

namespace doppio {

// LRN on oneDNN (engine ONEDNN, float), across or within channels: oneDNN's formulas are
// Caffe's (alpha / n, alpha / n^2 for the window, k, beta). Backward reads the workspace the
// forward pass left. It runs in a layout with jit kernels: the one its input arrives in (a
// oneDNN layer's blocked one) where that has them, else a blocked one the input is reordered
// into (oneDNN's LRN on Caffe's NCHW is plain C++); primitives are made on the first Forward
// that sees an arriving layout. It leaves its output and the bottom diff in the layout it ran in.
class OnednnLRNLayer : public OnednnLayer<LRNLayer<float>> {
 public:
  explicit OnednnLRNLayer(const LayerParameter& param) : OnednnLayer(param) {}
  void Reshape(const BlobVec& bottom, const BlobVec& top) override;

 protected:
  bool RunsBf16() const override { return true; }
  void Forward_cpu(const BlobVec& bottom, const BlobVec& top) override;
  void Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override;

 private:
  // The primitives for an input in layout `src`.
  void Prepare(const dnnl::memory::desc& src);

  std::vector<int> prepared_shape_;
  dnnl::memory::desc prepared_src_;
  dnnl::lrn_forward forward_;
  dnnl::lrn_backward backward_;
  OnednnTensor src_, dst_, diff_dst_, diff_src_;
  dnnl::memory workspace_;
};

}  // namespace doppio

#endif  // DOPPIO_WITH_ONEDNN
