#pragma once

#ifdef DOPPIO_WITH_ONEDNN

#include <vector>

#include "doppio/device/onednn.hpp"
#include "doppio/layers/batch_norm_layer.hpp"

namespace doppio {

// BatchNorm on oneDNN (engine ONEDNN, float), with Caffe's semantics: no scale or shift of its
// own, the three stored blobs (running sums of mean and unbiased variance, and their
// moving-average factor) updated in Forward from the batch statistics oneDNN computes, or
// read with use_global_stats. Like the CAFFE engine it keeps the normalised output x_norm_
// for Backward (an in-place Scale after it reads that copy instead of keeping its own), so
// Backward runs oneDNN's backward on x_norm_ as its input with mean 0 and variance 1 - eps,
// and 1 / sqrt(var + eps) of the batch as the scale: the same gradient without the input,
// which an in-place layer has overwritten.
// The Scale that follows BatchNorm in Caffe's nets has no oneDNN engine: oneDNN 2.6 has no
// primitive for its parameter gradients (a product, then a reduction over batch and space: a
// full-size buffer and two passes where the CAFFE kernel makes one), and its forward alone, a
// binary op, would save nothing over the CAFFE loop.
class OnednnBatchNormLayer : public BatchNormLayer<float> {
 public:
  explicit OnednnBatchNormLayer(const LayerParameter& param) : BatchNormLayer<float>(param) {}
  void Reshape(const BlobVec& bottom, const BlobVec& top) override;

 protected:
  void Forward_cpu(const BlobVec& bottom, const BlobVec& top) override;
  void Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override;

 private:
  void Prepare();
  float* Values(dnnl::memory& memory) { return static_cast<float*>(memory.get_data_handle()); }

  dnnl::engine engine_{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream_{engine_};
  std::vector<int> prepared_shape_;
  dnnl::batch_normalization_forward forward_;
  dnnl::batch_normalization_backward backward_;
  dnnl::memory src_, dst_, diff_dst_, diff_src_;
  // Per channel: the statistics Forward uses (the batch's, written by oneDNN, or the stored
  // ones), Backward's constants (zero mean, variance 1 - eps, the scale 1 / sqrt(var + eps)),
  // and the gradient of that scale, which oneDNN computes and nothing reads.
  dnnl::memory mean_memory_, variance_memory_, zero_mean_, unit_variance_, scale_, diff_scale_;
};

}  // namespace doppio

#endif  // DOPPIO_WITH_ONEDNN
