#pragma once

#include <memory>
#include <vector>

#include "doppio/core/synced_memory.hpp"
#include "doppio/layers/loss_layer.hpp"

namespace doppio {

// Multinomial logistic loss on probabilities: bottom 0 is (N, C, ...) holding probabilities
// (a Softmax's output), bottom 1 the N labels. loss = -sum_n log(max(p[n][label_n], 1e-20)) / N.
// Caffe's layer divides by N whatever loss_param says and has no ignore_label; so does this
// one, and it refuses those fields rather than ignore them. Only the probabilities take a
// gradient: -1 / (N max(p, 1e-20)) at each label, 0 elsewhere.
template <typename Dtype>
class MultinomialLogisticLossLayer : public LossLayer<Dtype> {
 public:
  using typename Layer<Dtype>::BlobVec;

  explicit MultinomialLogisticLossLayer(const LayerParameter& param) : LossLayer<Dtype>(param) {}
  void LayerSetUp(const BlobVec& bottom, const BlobVec& top) override;
  void Reshape(const BlobVec& bottom, const BlobVec& top) override;
  const char* type() const override { return "MultinomialLogisticLoss"; }

 protected:
  void Forward_cpu(const BlobVec& bottom, const BlobVec& top) override;
  void Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override;
#ifdef DOPPIO_WITH_CUDA
  void Forward_gpu(const BlobVec& bottom, const BlobVec& top) override;
  void Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override;
#endif

 private:
  // Caffe's floor under a probability before its log.
  static constexpr double kLogThreshold = 1e-20;

  // The label of item n; throws Error naming the layer when it is not a class index.
  int CheckedLabel(const Dtype* labels, int n) const;

  int num_ = 0;
  int dim_ = 0;            // values per item: the classes (times any trailing axes, as in Caffe)
  Blob<Dtype> item_loss_;  // per-item losses (GPU)
#ifdef DOPPIO_WITH_CUDA
  std::shared_ptr<SyncedMemory> bad_label_;
#endif
};

}  // namespace doppio
