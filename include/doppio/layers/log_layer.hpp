#pragma once

#include <vector>

#include "doppio/layers/neuron_layer.hpp"

namespace doppio {

// y = log_base(shift + scale * x); base -1 means e.
template <typename Dtype>
class LogLayer : public NeuronLayer<Dtype> {
 public:
  using BlobVec = typename Layer<Dtype>::BlobVec;

  explicit LogLayer(const LayerParameter& param) : NeuronLayer<Dtype>(param) {}
  void LayerSetUp(const BlobVec& bottom, const BlobVec& top) override;
  const char* type() const override { return "Log"; }

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
  Dtype scale_ = 1;
  Dtype shift_ = 0;
  // 1 / ln(base), and scale / ln(base) for the gradient.
  Dtype base_scale_ = 1;
  Dtype backward_num_scale_ = 1;
};

}  // namespace doppio
