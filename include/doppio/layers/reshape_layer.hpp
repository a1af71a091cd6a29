#pragma once

#include <string>
#include <vector>

#include "doppio/core/layer.hpp"

namespace doppio {

// Gives its bottom a new shape without moving data (the top shares data and diff).
// reshape_param.shape replaces the axes [axis, axis + num_axes) of the bottom; in it a 0
// copies the bottom's dimension at that position and a single -1 is inferred from the count.
template <typename Dtype>
class ReshapeLayer : public Layer<Dtype> {
 public:
  using BlobVec = typename Layer<Dtype>::BlobVec;

  explicit ReshapeLayer(const LayerParameter& param) : Layer<Dtype>(param) {}
  void LayerSetUp(const BlobVec& bottom, const BlobVec& top) override;
  void Reshape(const BlobVec& bottom, const BlobVec& top) override;

  const char* type() const override { return "Reshape"; }
  int ExactNumBottomBlobs() const override { return 1; }
  int ExactNumTopBlobs() const override { return 1; }

 protected:
  void Forward_cpu(const BlobVec& bottom, const BlobVec& top) override {}
  void Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {}
#ifdef DOPPIO_WITH_CUDA
  void Forward_gpu(const BlobVec& bottom, const BlobVec& top) override;
  void Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override;
#endif

 private:
  std::string ShapeParamString() const;

  // Positions in reshape_param.shape that hold 0 (copy) and -1 (infer; -1 if none).
  std::vector<int> copy_axes_;
  int inferred_axis_ = -1;
  // Product of the explicitly given (positive) dimensions.
  long long constant_count_ = 1;
};

}  // namespace doppio
