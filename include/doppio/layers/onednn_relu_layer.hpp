#pragma once

#ifdef DOPPIO_WITH_ONEDNN

#include <vector>

#include "doppio/layers/onednn_fusion.hpp"
#include "doppio/layers/onednn_layer.hpp"
#include "doppio/layers/onednn_tensor.hpp"
#include "doppio/layers/relu_layer.hpp"

namespace doppio {

// ReLU on oneDNN (engine ONEDNN, float), with negative_slope, in place or not. Its gradient
// reads what the CAFFE engine's reads: in place with a slope of 0 or more, the output (its
// sign is the input's), so no copy is kept; otherwise the input (kept where a negative slope
// runs in place). A ReLU that is not in place never reads its top, which a later layer may
// change in place (Scale by a negative factor would flip its signs).
// The net's fusion passes (onednn_fusion.cpp) may have an earlier layer compute an in-place
// ReLU (OnednnFusionGuest): Forward on the CPU then leaves the data as it is, and so does
// Backward where the host computes the gradient too (BatchNorm's fuse_norm_relu). Otherwise
// Backward is unchanged: it reads the output's sign, which the fused output has.
// An input holding a NaN (checked every Forward) runs Caffe's kernels, forward and backward:
// oneDNN's ReLU makes a NaN 0. A fused ReLU whose host's output may hold one is Caffe's kernel
// run by the host, and its Backward is Caffe's too.
class OnednnReLULayer : public OnednnLayer<ReLULayer<float>>, public OnednnFusionGuest {
 public:
  explicit OnednnReLULayer(const LayerParameter& param) : OnednnLayer(param) {}
  void Reshape(const BlobVec& bottom, const BlobVec& top) override;

  float negative_slope() const { return negative_slope_; }
  void SkipBackward() { skip_backward_ = true; }
  bool skips_backward() const { return skip_backward_; }

 protected:
  bool RunsBf16() const override { return true; }
  void Forward_cpu(const BlobVec& bottom, const BlobVec& top) override;
  void Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override;

 private:
  // Whether the gradient is computed from the output rather than the input: in place with a
  // slope of 0 or more. Set by Reshape.
  bool FromOutput() const { return from_output_; }
  // The primitives for data in layout `desc`, and for the layout a bottom's data arrives in.
  void Prepare(const dnnl::memory::desc& desc);
  void PrepareFor(const SyncedMemory& data);

  int prepared_count_ = -1;
  dnnl::memory::desc prepared_desc_;
  bool from_output_ = false;
  bool skip_backward_ = false;
  // The last Forward's input held a NaN (fused: the host ran Caffe's kernel): it ran, and
  // Backward runs, Caffe's kernels.
  bool caffe_pass_ = false;
  dnnl::eltwise_forward forward_;
  dnnl::eltwise_backward backward_;
  OnednnTensor data_, dst_, diff_dst_, diff_src_;
};

}  // namespace doppio

#endif  // DOPPIO_WITH_ONEDNN
