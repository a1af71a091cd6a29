#pragma once

#include <utility>
#include <vector>

#include "doppio/core/layer.hpp"

namespace doppio {

// The indices (and/or values) of the top_k largest entries, over argmax_param.axis or, without
// an axis, over everything but the first axis. Has no gradient.
template <typename Dtype>
class ArgMaxLayer : public Layer<Dtype> {
 public:
  using BlobVec = typename Layer<Dtype>::BlobVec;

  explicit ArgMaxLayer(const LayerParameter& param) : Layer<Dtype>(param) {}
  void LayerSetUp(const BlobVec& bottom, const BlobVec& top) override;
  void Reshape(const BlobVec& bottom, const BlobVec& top) override;

  const char* type() const override { return "ArgMax"; }
  int ExactNumBottomBlobs() const override { return 1; }
  int ExactNumTopBlobs() const override { return 1; }
  bool AllowForceBackward(int bottom_index) const override { return false; }

 protected:
  void Forward_cpu(const BlobVec& bottom, const BlobVec& top) override;
  // Throws Error: ArgMax is not differentiable.
  void Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override;
#ifdef DOPPIO_WITH_CUDA
  void Forward_gpu(const BlobVec& bottom, const BlobVec& top) override;
  void Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override;
#endif

 private:
  bool out_max_val_ = false;
  int top_k_ = 1;
  bool has_axis_ = false;
  int axis_ = 0;
  std::vector<std::pair<Dtype, int>> scratch_;
};

}  // namespace doppio
