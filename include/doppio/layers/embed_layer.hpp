#pragma once

#include <vector>

#include "doppio/core/layer.hpp"

namespace doppio {

// A lookup table: each bottom value is an integer index in [0, input_dim) (stored as Dtype)
// and selects one row of the input_dim x num_output weight matrix, plus an optional bias.
// The top's shape is the bottom's shape with num_output appended. The indices take no
// gradient.
template <typename Dtype>
class EmbedLayer : public Layer<Dtype> {
 public:
  using BlobVec = typename Layer<Dtype>::BlobVec;

  explicit EmbedLayer(const LayerParameter& param) : Layer<Dtype>(param) {}
  void LayerSetUp(const BlobVec& bottom, const BlobVec& top) override;
  void Reshape(const BlobVec& bottom, const BlobVec& top) override;

  const char* type() const override { return "Embed"; }
  int ExactNumBottomBlobs() const override { return 1; }
  int ExactNumTopBlobs() const override { return 1; }
  bool AllowForceBackward(int bottom_index) const override { return false; }

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
  // Reads bottom value n as an index; throws Error if it is not an integer in range.
  int Index(const Dtype* indices, int n) const;

  int num_output_ = 0;
  int input_dim_ = 0;
  bool bias_term_ = true;
#ifdef DOPPIO_WITH_CUDA
  std::shared_ptr<SyncedMemory> bad_index_;  // the first bottom element that is not an index
#endif
};

}  // namespace doppio
