#pragma once

#include <vector>

#include "doppio/core/layer.hpp"

namespace doppio {

// Exposes a learnable blob of shape parameter_param.shape as its only top, so that other
// layers can take a parameter as a bottom. The blob starts at zero (its values come from
// weights or from training), as in Caffe.
//
// Caffe makes the top share the blob's data and diff; here Forward copies the data and
// Backward adds the top's gradient to the blob's, so that the gradient accumulates like any
// other parameter's (iter_size, shared parameters) and the blob may live in the net's arena.
template <typename Dtype>
class ParameterLayer : public Layer<Dtype> {
 public:
  using BlobVec = typename Layer<Dtype>::BlobVec;

  explicit ParameterLayer(const LayerParameter& param) : Layer<Dtype>(param) {}
  void LayerSetUp(const BlobVec& bottom, const BlobVec& top) override;
  void Reshape(const BlobVec& bottom, const BlobVec& top) override;
  const char* type() const override { return "Parameter"; }

  int ExactNumBottomBlobs() const override { return 0; }
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
};

}  // namespace doppio
