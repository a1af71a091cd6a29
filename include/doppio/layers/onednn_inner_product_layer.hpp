#pragma once

#ifdef DOPPIO_WITH_ONEDNN

#include <vector>

#include "doppio/layers/inner_product_layer.hpp"
#include "doppio/layers/onednn_fusion.hpp"
#include "doppio/layers/onednn_layer.hpp"
#include "doppio/layers/onednn_params.hpp"

namespace doppio {

// InnerProduct on oneDNN (engine ONEDNN, float): the bottom viewed as an M x K matrix, the
// weights (num_output x K, or K x num_output with transpose) read where they lie in Caffe's
// layout. oneDNN's GEMM-based kernels take that layout as it is; a blocked copy would cost
// a copy of every weight (AlexNet's fc6 alone is 151 MB) for little speed. An in-place ReLU
// after it is Caffe's kernel run on its output after the primitive, and its Backward Caffe's:
// oneDNN's ReLU post-op makes a NaN 0, and the output (M x N) is small next to what telling
// beforehand whether one may come out would scan, the input and, after each update, the weights.
// In bf16 (mixed precision) the input, the weights and the top's diff are read as bf16 copies
// and the output and the bottom's diff written in f32: the parameter gradients stay fp32 GEMMs.
class OnednnInnerProductLayer : public OnednnLayer<InnerProductLayer<float>>,
                                public OnednnReLUFusable {
 public:
  explicit OnednnInnerProductLayer(const LayerParameter& param) : OnednnLayer(param) {}
  void Reshape(const BlobVec& bottom, const BlobVec& top) override;
  bool CanFuseReLU() const override { return true; }
  // In bf16 the math only: its output and bottom diff are fp32.
  LayerPrecision precision() const override {
    return data_type() == dnnl::memory::data_type::bf16 ? LayerPrecision{FP32, BF16}
                                                        : LayerPrecision{};
  }

 protected:
  void Forward_cpu(const BlobVec& bottom, const BlobVec& top) override;
  void Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override;

 private:
  void PrepareForward();
  void PrepareBackward();
  // The ReLU runs after the primitive: nothing to recreate.
  void RecreateForward() override {}
  // Add this batch's gradients into the parameter blobs' diffs.
  void AddWeightGradient(const float* bottom, const float* top_diff);
  void AddBiasGradient(const float* top_diff);
  // The weights as Caffe stores them: (num_output, K) rows, or their transpose; in bf16, the
  // same layout of the copy the primitives read.
  dnnl::memory::desc UserWeightsDesc(
      dnnl::memory::data_type type = dnnl::memory::data_type::f32) const;
  bool RunsBf16() const override { return true; }

  int prepared_m_ = -1;
  bool backward_prepared_ = false;

  dnnl::inner_product_forward::primitive_desc forward_pd_;
  dnnl::inner_product_forward forward_;
  OnednnTensor src_, dst_;
  OnednnParamData weights_, bias_;

  dnnl::inner_product_backward_data backward_data_;
  OnednnTensor data_diff_dst_, diff_src_;
  OnednnParamData data_weights_;
};

}  // namespace doppio

#endif  // DOPPIO_WITH_ONEDNN
