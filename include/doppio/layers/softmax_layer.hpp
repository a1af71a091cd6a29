#pragma once

#include <vector>

#include "doppio/core/layer.hpp"

namespace doppio {

// Softmax over one axis (softmax_param.axis, default 1): every position of the other axes
// gets its own distribution. In-place computation is allowed.
template <typename Dtype>
class SoftmaxLayer : public Layer<Dtype> {
 public:
  using typename Layer<Dtype>::BlobVec;

  explicit SoftmaxLayer(const LayerParameter& param) : Layer<Dtype>(param) {}
  void Reshape(const BlobVec& bottom, const BlobVec& top) override;

  const char* type() const override { return "Softmax"; }
  int ExactNumBottomBlobs() const override { return 1; }
  int ExactNumTopBlobs() const override { return 1; }

 protected:
  void Forward_cpu(const BlobVec& bottom, const BlobVec& top) override;
  void Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override;
#ifdef DOPPIO_WITH_CUDA
  void Forward_gpu(const BlobVec& bottom, const BlobVec& top) override;
  void Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override;
#endif

  int outer_num_ = 0;
  int channels_ = 0;
  int inner_num_ = 0;
  // One value per inner position: the running max, sum or dot product.
  Blob<Dtype> scale_;
};

}  // namespace doppio
