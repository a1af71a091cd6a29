#pragma once

#ifdef DOPPIO_WITH_CUDNN

#include <vector>

#include "doppio/core/gpu_storage.hpp"
#include "doppio/core/input_exchange.hpp"
#include "doppio/core/layer_fusion.hpp"
#include "doppio/device/cudnn.hpp"
#include "doppio/layers/batch_norm_layer.hpp"

namespace doppio {

// BatchNorm on cuDNN (engine CUDNN, the default on the GPU), with Caffe's semantics: no scale
// or shift of its own, and the three stored blobs (running sums of the mean and of the
// unbiased variance, and their moving-average factor) updated in Forward. With batch
// statistics one cudnnBatchNormalizationForwardTraining computes the output and the batch's
// mean and unbiased variance (cuDNN's running averages with factor 1 are exactly the batch's,
// which Caffe's running sums then take), and one cudnnBatchNormalizationBackward the input's
// gradient. cuDNN's backward reads the input, which an in-place layer overwrites: the input is
// kept in the layer's own buffer, by exchange where the net can (core/input_exchange.hpp), by
// a copy otherwise, and the in-place gradient is written to scratch first, since cuDNN does
// not promise that its output may alias its input. With use_global_stats, and on the CPU, it
// is the CAFFE BatchNormLayer.
//
// Fused (cudnn_fusion.cpp) with the in-place Scale after it, the Scale's factor and bias are
// cuDNN's gamma and beta: one call each way computes both layers, and Backward adds the gamma
// and beta gradients to the Scale's parameter diffs. cuDNN fuses a ReLU (and ResNet's add +
// ReLU) into batch normalization only for half-precision NHWC data, so in float the ReLU
// stays its own layer. Under BF16 and FP16, with batch statistics, the data and its gradient
// are 16-bit (cuDNN computes in fp32; gamma, beta and the statistics stay fp32).
template <typename Dtype>
class CudnnBatchNormLayer : public BatchNormLayer<Dtype>,
                            public FusionHost,
                            public InputExchange<Dtype> {
 public:
  using typename BatchNormLayer<Dtype>::BlobVec;
  explicit CudnnBatchNormLayer(const LayerParameter& param) : BatchNormLayer<Dtype>(param) {}
  void LayerSetUp(const BlobVec& bottom, const BlobVec& top) override;
  void Reshape(const BlobVec& bottom, const BlobVec& top) override;

  // No normalised copy to offer a Scale after it: on the GPU, Backward reads the input.
  const Blob<Dtype>* KeptTopCopy(int top_index) const override { return nullptr; }
  // With batch statistics, in place, the input is kept by exchange where the net can.
  InputExchange<Dtype>* input_exchange() override {
    return keeps_input() && in_place_ ? this : nullptr;
  }

  // From the next Forward on the GPU, computes `scale` (an in-place Scale on this layer's top
  // with a learned factor per channel, and maybe a bias) too. Only with batch statistics.
  void FuseScale(Layer<Dtype>* scale);
  bool fused() const { return scale_layer_ != nullptr; }
  LayerPrecision precision() const override {
    return StoragePrecision(keeps_input() ? GpuStorageOf(*this) : GpuStorage::kFloat32);
  }

 protected:
  void Forward_gpu(const BlobVec& bottom, const BlobVec& top) override;
  void Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override;

 private:
  // Whether Forward on the GPU runs cuDNN (batch statistics) and Backward reads the input.
  bool keeps_input() const { return !this->use_global_stats_; }
  bool WantsExchange(const SyncedMemory& data) const override { return this->mode() == Mode::GPU; }
  // The input cuDNN reads in Forward, in `storage`: in place, kept() (by exchange, or a copy).
  const void* Input(const Blob<Dtype>& bottom, GpuStorage storage);
  // Fills gamma_beta_ with the Scale's factor and bias (fused) or with 1 and 0.
  void PrepareGammaBeta();

  bool in_place_ = false;
  CudnnTensorDesc data_desc_;   // the input as (N, C, spatial, 1)
  CudnnTensorDesc param_desc_;  // (1, C, 1, 1)
  // Per channel: gamma then beta (aligned copies: the Scale's blobs live in the packed arena),
  // the batch's mean then its unbiased variance, what Forward saves for Backward (mean and
  // 1 / sqrt(var + eps)), and the gamma and beta gradients.
  Blob<Dtype> gamma_beta_;
  Blob<Dtype> batch_stats_;
  Blob<Dtype> saved_mean_;
  Blob<Dtype> saved_inv_std_;
  Blob<Dtype> gamma_beta_diff_;
  Layer<Dtype>* scale_layer_ = nullptr;
  int bias_param_ = -1;  // the Scale's bias blob, or -1
  GpuStorageReader input_reader_;
  GpuStorageReader diff_reader_;
};

}  // namespace doppio

#endif  // DOPPIO_WITH_CUDNN
