#pragma once

#include <vector>

#include "doppio/core/layer.hpp"

namespace doppio {

// Top-k classification accuracy over the positions whose label is not
// accuracy_param.ignore_label. A position counts as correct when fewer than top_k other
// classes score at least as high as the true class (so a tie counts against it, as in
// Caffe). The optional second top holds the accuracy of each class (shape {num_classes}).
// There is no backward pass.
template <typename Dtype>
class AccuracyLayer : public Layer<Dtype> {
 public:
  using typename Layer<Dtype>::BlobVec;

  explicit AccuracyLayer(const LayerParameter& param) : Layer<Dtype>(param) {}
  void LayerSetUp(const BlobVec& bottom, const BlobVec& top) override;
  void Reshape(const BlobVec& bottom, const BlobVec& top) override;

  const char* type() const override { return "Accuracy"; }
  int ExactNumBottomBlobs() const override { return 2; }
  int MinTopBlobs() const override { return 1; }
  int MaxTopBlobs() const override { return 2; }
  bool AllowForceBackward(int bottom_index) const override { return false; }

 protected:
  void Forward_cpu(const BlobVec& bottom, const BlobVec& top) override;
  // Throws Error naming the layer when any gradient is requested.
  void Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override;
#ifdef DOPPIO_WITH_CUDA
  void Forward_gpu(const BlobVec& bottom, const BlobVec& top) override;
  void Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override;
#endif

  int top_k_ = 1;
  bool has_ignore_label_ = false;
  int ignore_label_ = 0;
  int label_axis_ = 1;
  int outer_num_ = 0;
  int inner_num_ = 0;
  // Per-class count of labelled positions, for the per-class top.
  std::vector<int> class_counts_;
#ifdef DOPPIO_WITH_CUDA
  // Forward_gpu's verdict per position: 1 correct, 0 wrong, -1 ignored, -2 invalid label.
  std::shared_ptr<SyncedMemory> verdicts_gpu_;
#endif
};

}  // namespace doppio
