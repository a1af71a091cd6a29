#pragma once

#include <vector>

#include "doppio/layers/neuron_layer.hpp"

namespace doppio {

// y = 1 / (1 + exp(-x)).
template <typename Dtype>
class SigmoidLayer : public NeuronLayer<Dtype> {
 public:
  using BlobVec = typename Layer<Dtype>::BlobVec;

  explicit SigmoidLayer(const LayerParameter& param) : NeuronLayer<Dtype>(param) {}

  const char* type() const override { return "Sigmoid"; }

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
