#pragma once

#include <vector>

#include "doppio/core/layer.hpp"

namespace doppio {

// Mean-variance normalisation, as Caffe's MVN: over each (item, channel) row of H*W values,
// or each item's C*H*W values with mvn_param.across_channels, subtracts the mean and, with
// normalize_variance (the default), divides by sqrt(variance) + eps. The variance is the mean
// of the squared deviations. Backward is Caffe's: with y the output and m() a row mean,
// dx = (dy - m(dy) - y m(y dy)) / (sqrt(variance) + eps), or dy - m(dy) without variance
// normalisation. It may run in place.
template <typename Dtype>
class MVNLayer : public Layer<Dtype> {
 public:
  using BlobVec = typename Layer<Dtype>::BlobVec;

  explicit MVNLayer(const LayerParameter& param) : Layer<Dtype>(param) {}
  void LayerSetUp(const BlobVec& bottom, const BlobVec& top) override;
  void Reshape(const BlobVec& bottom, const BlobVec& top) override;
  const char* type() const override { return "MVN"; }

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
  bool normalize_variance_ = true;
  bool across_channels_ = false;
  Dtype eps_ = 0;
  int rows_ = 0;
  int dim_ = 0;
  Blob<Dtype> mean_;   // per row
  Blob<Dtype> scale_;  // per row: sqrt(variance) + eps
  // Backward's per-row sums of dy and of y * dy.
  Blob<Dtype> sum_dy_;
  Blob<Dtype> sum_ydy_;
};

}  // namespace doppio
