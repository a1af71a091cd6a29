#pragma once

#include <vector>

#include "doppio/layers/neuron_layer.hpp"

namespace doppio {

// y = 1 if x > threshold else 0. It has no gradient: asking Backward to propagate throws.
template <typename Dtype>
class ThresholdLayer : public NeuronLayer<Dtype> {
 public:
  using BlobVec = typename Layer<Dtype>::BlobVec;

  explicit ThresholdLayer(const LayerParameter& param) : NeuronLayer<Dtype>(param) {}
  void LayerSetUp(const BlobVec& bottom, const BlobVec& top) override;
  const char* type() const override { return "Threshold"; }
  // force_backward must not ask for the gradient this layer does not have.
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
  Dtype threshold_ = 0;
};

}  // namespace doppio
