#pragma once

#include <memory>
#include <vector>

#include "doppio/layers/loss_layer.hpp"
#include "doppio/layers/softmax_layer.hpp"

namespace doppio {

// Infogain loss: -sum_k H[label][k] log p_k, with p the softmax of the predictions over
// infogain_loss_param.axis. H (num_classes x num_classes) is read from the BlobProto file
// infogain_loss_param.source, or given as a third bottom. With H the identity this is the
// softmax loss. ignore_label and normalization follow loss_param. An optional second top
// receives the probabilities. Only the predictions take a gradient.
template <typename Dtype>
class InfogainLossLayer : public LossLayer<Dtype> {
 public:
  using typename Layer<Dtype>::BlobVec;

  explicit InfogainLossLayer(const LayerParameter& param) : LossLayer<Dtype>(param) {}
  void LayerSetUp(const BlobVec& bottom, const BlobVec& top) override;
  void Reshape(const BlobVec& bottom, const BlobVec& top) override;

  const char* type() const override { return "InfogainLoss"; }
  int ExactNumBottomBlobs() const override { return -1; }
  int MinBottomBlobs() const override { return 2; }
  int MaxBottomBlobs() const override { return 3; }
  int ExactNumTopBlobs() const override { return -1; }
  int MinTopBlobs() const override { return 1; }
  int MaxTopBlobs() const override { return 2; }
  bool AllowForceBackward(int bottom_index) const override { return bottom_index == 0; }

 protected:
  void Forward_cpu(const BlobVec& bottom, const BlobVec& top) override;
  void Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override;
#ifdef DOPPIO_WITH_CUDA
  void Forward_gpu(const BlobVec& bottom, const BlobVec& top) override;
  void Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override;
#endif

  int CheckedLabel(const Dtype* labels, int index) const;
  const Blob<Dtype>& Infogain(const BlobVec& bottom) const {
    return bottom.size() >= 3 ? *bottom[2] : infogain_;
  }

  std::unique_ptr<SoftmaxLayer<Dtype>> softmax_layer_;
  Blob<Dtype> prob_;
  BlobVec softmax_bottom_;
  BlobVec softmax_top_;
  Blob<Dtype> infogain_;  // H read from infogain_loss_param.source.
  Blob<Dtype> row_sums_;  // sum_k H[l][k] for each label l, for the gradient.
  bool has_ignore_label_ = false;
  int ignore_label_ = 0;
  LossParameter::NormalizationMode normalization_ = LossParameter::VALID;
  int axis_ = 1;
  int num_classes_ = 0;
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
