#pragma once

#include <vector>

#include "doppio/layers/neuron_layer.hpp"

namespace doppio {

// y = (shift + scale * x) ^ power.
template <typename Dtype>
class PowerLayer : public NeuronLayer<Dtype> {
 public:
  using BlobVec = typename Layer<Dtype>::BlobVec;

  explicit PowerLayer(const LayerParameter& param) : NeuronLayer<Dtype>(param) {}
  void LayerSetUp(const BlobVec& bottom, const BlobVec& top) override;
  const char* type() const override { return "Power"; }

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
  Dtype power_ = 1;
  Dtype scale_ = 1;
  Dtype shift_ = 0;
  // dy/dx = diff_scale_ * (shift + scale * x) ^ (power - 1), with diff_scale_ = power * scale;
  // zero means the output is constant.
  Dtype diff_scale_ = 1;
};

}  // namespace doppio
