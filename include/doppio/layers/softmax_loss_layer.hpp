#pragma once

#include <memory>
#include <vector>

#include "doppio/layers/loss_layer.hpp"
#include "doppio/layers/softmax_layer.hpp"

namespace doppio {

// Multinomial logistic loss of the softmax of the predictions: -log p[label], summed over
// the positions whose label is not loss_param.ignore_label and divided by the normalizer of
// loss_param.normalization. An optional second top receives the probabilities. The softmax
// is a Softmax layer of the engine the registry chooses on the CPU for softmax_param's
// engine: ONEDNN by default in a build with oneDNN (float), CAFFE otherwise.
template <typename Dtype>
class SoftmaxWithLossLayer : public LossLayer<Dtype> {
 public:
  using typename Layer<Dtype>::BlobVec;

  explicit SoftmaxWithLossLayer(const LayerParameter& param) : LossLayer<Dtype>(param) {}
  void LayerSetUp(const BlobVec& bottom, const BlobVec& top) override;
  void Reshape(const BlobVec& bottom, const BlobVec& top) override;

  const char* type() const override { return "SoftmaxWithLoss"; }
  int ExactNumTopBlobs() const override { return -1; }
  int MinTopBlobs() const override { return 1; }
  int MaxTopBlobs() const override { return 2; }
  // The layer that computes the probabilities: its engine() says which engine runs them.
  const Layer<Dtype>& softmax_layer() const { return *softmax_layer_; }

 protected:
  void Forward_cpu(const BlobVec& bottom, const BlobVec& top) override;
  void Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override;
#ifdef DOPPIO_WITH_CUDA
  void Forward_gpu(const BlobVec& bottom, const BlobVec& top) override;
  void Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override;
#endif

  // Reads the label at (i, j) and throws Error naming the layer when it is neither the
  // ignore label nor a valid class; returns -1 for an ignored position.
  int CheckedLabel(const Dtype* labels, int i, int j) const;

  std::shared_ptr<Layer<Dtype>> softmax_layer_;
  Blob<Dtype> prob_;
  BlobVec softmax_bottom_;
  BlobVec softmax_top_;
  bool has_ignore_label_ = false;
  int ignore_label_ = 0;
  LossParameter::NormalizationMode normalization_ = LossParameter::VALID;
  int softmax_axis_ = 1;
  int channels_ = 0;
  int outer_num_ = 0;
  int inner_num_ = 0;
#ifdef DOPPIO_WITH_CUDA
  // Per-position loss and validity (1 or 0) for the device reductions, and the first
  // invalid label's index.
  Blob<Dtype> loss_buffer_;
  Blob<Dtype> count_buffer_;
  std::shared_ptr<SyncedMemory> bad_label_;
#endif
};

}  // namespace doppio
