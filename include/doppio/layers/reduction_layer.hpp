#pragma once

#include <vector>

#include "doppio/core/layer.hpp"

namespace doppio {

// Reduces all axes from reduction_param.axis on to one number per leading index (SUM, ASUM,
// SUMSQ or MEAN), scaled by coeff. The top's shape is the bottom's shape up to axis.
template <typename Dtype>
class ReductionLayer : public Layer<Dtype> {
 public:
  using BlobVec = typename Layer<Dtype>::BlobVec;

  explicit ReductionLayer(const LayerParameter& param) : Layer<Dtype>(param) {}
  void LayerSetUp(const BlobVec& bottom, const BlobVec& top) override;
  void Reshape(const BlobVec& bottom, const BlobVec& top) override;

  const char* type() const override { return "Reduction"; }
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

 private:
  ReductionParameter::ReductionOp op_ = ReductionParameter::SUM;
  int axis_ = 0;
  // coeff, divided by the reduced count for MEAN.
  Dtype coeff_ = 1;
  int num_ = 1;
  int dim_ = 1;
  // A vector of ones, for SUM and MEAN as one matrix-vector product.
  std::vector<Dtype> ones_;
};

}  // namespace doppio
