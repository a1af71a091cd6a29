#pragma once

#ifdef DOPPIO_WITH_ONEDNN

#include <vector>

#include "doppio/layers/batch_norm_layer.hpp"
#include "doppio/layers/onednn_fusion.hpp"
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
// and shift gradients to the Scale's parameter diffs.
class OnednnBatchNormLayer : public BatchNormLayer<float>, public OnednnFusionHost {
 public:
  explicit OnednnBatchNormLayer(const LayerParameter& param) : BatchNormLayer<float>(param) {}
  void Reshape(const BlobVec& bottom, const BlobVec& top) override;

  // From the next Forward on, computes `scale` (an in-place Scale with a learned scale of one
  // value per channel, and maybe a bias) and, with `relu`, a ReLU of slope 0 after it.
  void FuseScale(Layer<float>* scale, bool relu);
  bool fused() const { return scale_layer_ != nullptr; }

 protected:
  void Forward_cpu(const BlobVec& bottom, const BlobVec& top) override;
  void Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override;

 private:
  void Prepare();
  void PrepareFused(const dnnl::memory::desc& data, const dnnl::memory::desc& stats);
  void ForwardFused(const BlobVec& bottom, const BlobVec& top);
  void BackwardFused(const BlobVec& top, const BlobVec& bottom);
  // Caffe's running sums from this batch's mean and (biased) variance.
  void UpdateRunningSums();
  float* Values(dnnl::memory& memory) { return static_cast<float*>(memory.get_data_handle()); }

  dnnl::engine engine_{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream_{engine_};
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
  // shift's gradient, the ReLU's workspace, the input kept in the primitive's
  // layout, and the tensors reordered around the primitive.
  Layer<float>* scale_layer_ = nullptr;
  bool fused_relu_ = false;
  dnnl::memory shift_, diff_shift_, workspace_, kept_src_;
  // keep_src_ keeps an input in Caffe's layout, copy_src_ one that arrives in the primitive's.
  dnnl::reorder keep_src_, copy_src_;
  OnednnTensor fused_dst_, fused_diff_dst_, fused_diff_src_;
};

}  // namespace doppio

#endif  // DOPPIO_WITH_ONEDNN
