#pragma once

#ifdef DOPPIO_WITH_ONEDNN

#include <vector>

#include "doppio/layers/batch_norm_layer.hpp"
#include "doppio/layers/onednn_eltwise_layer.hpp"
#include "doppio/layers/onednn_fusion.hpp"
#include "doppio/layers/onednn_layer.hpp"
#include "doppio/layers/onednn_tensor.hpp"

namespace doppio {

// BatchNorm on oneDNN (engine ONEDNN, float), with Caffe's semantics: no scale or shift of its
// own, the three stored blobs (running sums of mean and unbiased variance, and their
// moving-average factor) updated in Forward from the batch statistics oneDNN computes, or
// read with use_global_stats. Like the CAFFE engine it keeps the normalised output x_norm_
// for Backward (an in-place Scale after it reads that copy instead of keeping its own), so
// Backward runs oneDNN's backward on x_norm_ as its input with mean 0 and variance 1 - eps,
// and 1 / sqrt(var + eps) of the batch as the scale: the same gradient without the input,
// which an in-place layer has overwritten.
// Fused (onednn_fusion.cpp) with the in-place Scale after it, and the in-place ReLU after that
// where there is one, one primitive with the Scale's parameters as its scale and shift (and
// fuse_norm_relu) computes all of them, in a blocked layout where oneDNN has a jit kernel:
// Forward keeps the input in that layout instead of x_norm_ (which then stays unallocated),
// Backward runs oneDNN's backward on it with the statistics Forward used and adds the scale
// and shift gradients to the Scale's parameter diffs. The input arriving in that layout (a
// convolution's output) is kept without a copy where the net can exchange the blob's buffer
// for the layer's kept one before the Forward (InputExchange); otherwise it is copied.
// fuse_norm_relu makes a NaN 0, where Caffe's ReLU passes it on: where the input, the scale
// and shift, and the statistics bound the output to finite values, it runs; otherwise
// primitives without it do, Caffe's ReLU after the forward one and its gradient before the
// backward one.
class OnednnBatchNormLayer : public OnednnLayer<BatchNormLayer<float>>,
                             public OnednnFusionHost,
                             public InputExchange<float> {
 public:
  explicit OnednnBatchNormLayer(const LayerParameter& param) : OnednnLayer(param) {}
  void Reshape(const BlobVec& bottom, const BlobVec& top) override;

  // From the next Forward on, computes `scale` (an in-place Scale with a learned scale of one
  // value per channel, and maybe a bias) and, with `relu`, a ReLU of slope 0 after it.
  void FuseScale(Layer<float>* scale, bool relu);
  bool fused() const { return scale_layer_ != nullptr; }
  // Fused, with the in-place blob an Eltwise SUM's bottom of coefficient 1: Backward reads
  // that bottom's diff, a copy of the Eltwise top's, from the top itself where `sum` left it
  // unwritten (OnednnEltwiseLayer::LeftToReader).
  void ReadDiffFromSum(const OnednnEltwiseLayer* sum, Blob<float>* sum_top);
  // Fused, it keeps its input for Backward: by exchange where the net can.
  InputExchange<float>* input_exchange() override { return fused() ? this : nullptr; }

 protected:
  // In bf16 where fused with its Scale (ResNet's pattern); alone, in f32.
  bool RunsBf16() const override { return fused(); }
  void Forward_cpu(const BlobVec& bottom, const BlobVec& top) override;
  void Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override;

 private:
  void Prepare();
  void PrepareFused(const dnnl::memory::desc& data, const dnnl::memory::desc& stats);
  // The fused primitives without fuse_norm_relu, and the tensors their ReLU reads and writes.
  void PrepareWithoutReLU();
  // Whether the fused output from the `count` values of `bottom` may hold a NaN, which
  // fuse_norm_relu would make 0. Called with the statistics Forward uses in place where they
  // are the stored ones.
  bool OutputMayHoldNaN(SyncedMemory& bottom, int count);
  void ForwardFused(const BlobVec& bottom, const BlobVec& top);
  void BackwardFused(const BlobVec& top, const BlobVec& bottom);
  // Caffe's running sums from this batch's mean and (biased) variance.
  void UpdateRunningSums();
  // Whether `data` holds the input in the layout Backward reads it in, the primitive's.
  bool ArrivesKept(const SyncedMemory& data) const;
  bool WantsExchange(const SyncedMemory& data) const override;
  float* Values(dnnl::memory& memory) { return static_cast<float*>(memory.get_data_handle()); }

  std::vector<int> prepared_shape_;
  dnnl::memory::dims data_dims_;
  dnnl::batch_normalization_forward forward_;
  dnnl::batch_normalization_backward backward_;
  dnnl::memory src_, dst_, diff_dst_, diff_src_;
  // Per channel: the statistics Forward uses (the batch's, written by oneDNN, or the stored
  // ones), Backward's constants (zero mean, variance 1 - eps, the scale 1 / sqrt(var + eps)),
  // and the gradient of that scale, which oneDNN computes and nothing reads.
  dnnl::memory mean_memory_, variance_memory_, zero_mean_, unit_variance_, scale_, diff_scale_;
  // Fused: the Scale layer whose blobs are the scale and shift, whether a ReLU follows, the
  // shift's gradient, the ReLU's workspace, and the tensors reordered around the primitive.
  Layer<float>* scale_layer_ = nullptr;
  bool fused_relu_ = false;
  dnnl::memory shift_, diff_shift_, workspace_;
  OnednnTensor fused_dst_, fused_diff_dst_, fused_diff_src_;
  // The fused primitives' layout and flags without fuse_norm_relu; the primitives without it,
  // made when an output first may hold a NaN; and for the ReLU's gradient before them, its
  // output and its bottom diff (the blob's) in that layout.
  dnnl::memory::desc layout_;
  dnnl::normalization_flags flags_without_relu_ = dnnl::normalization_flags::none;
  dnnl::batch_normalization_forward forward_without_relu_;
  dnnl::batch_normalization_backward backward_without_relu_;
  OnednnTensor relu_dst_, relu_diff_;
  // The input Backward reads, in the primitive's layout, in kept() (the blob's buffer by
  // exchange, or a copy): kept_src_ views it.
  dnnl::memory kept_src_;
  dnnl::reorder keep_src_, copy_src_;
  // ReadDiffFromSum's Eltwise and its top.
  const OnednnEltwiseLayer* sum_ = nullptr;
  Blob<float>* sum_top_ = nullptr;
};

}  // namespace doppio

#endif  // DOPPIO_WITH_ONEDNN
