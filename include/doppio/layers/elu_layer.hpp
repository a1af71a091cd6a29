#pragma once

#include <vector>

#include "doppio/layers/neuron_layer.hpp"

namespace doppio {

// y = x for x > 0, alpha * (exp(x) - 1) otherwise.
template <typename Dtype>
class ELULayer : public NeuronLayer<Dtype> {
 public:
  using BlobVec = typename Layer<Dtype>::BlobVec;

  explicit ELULayer(const LayerParameter& param) : NeuronLayer<Dtype>(param) {}
  void LayerSetUp(const BlobVec& bottom, const BlobVec& top) override;
  const char* type() const override { return "ELU"; }

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
  Dtype alpha_ = 1;
};

}  // namespace doppio
