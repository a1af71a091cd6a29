#pragma once

#include <vector>

#include "doppio/core/layer.hpp"

namespace doppio {

// Base of the element-wise layers: one bottom, one top of the same shape. Every neuron
// layer may run in place (top and bottom the same Blob); Forward and Backward stay correct
// then, because a layer whose gradient needs the input keeps a copy of it first.
template <typename Dtype>
class NeuronLayer : public Layer<Dtype> {
 public:
  using BlobVec = typename Layer<Dtype>::BlobVec;

  explicit NeuronLayer(const LayerParameter& param) : Layer<Dtype>(param) {}
  void Reshape(const BlobVec& bottom, const BlobVec& top) override;

  int ExactNumBottomBlobs() const override { return 1; }
  int ExactNumTopBlobs() const override { return 1; }

 protected:
  // For layers whose Backward reads the input: call first in Forward_cpu. In place, Forward
  // is about to overwrite the input, so it is copied; otherwise nothing is done.
  void KeepInputIfInPlace(const Blob<Dtype>& bottom, const Blob<Dtype>& top);
  // The input the last Forward saw: the kept copy when one was made, else the bottom's data
  // (which in place is the top's data, enough for layers that can read the sign from it).
  const Dtype* ForwardInput(const Blob<Dtype>& bottom) const;
#ifdef DOPPIO_WITH_CUDA
  // The same two for Forward_gpu / Backward_gpu, with the copy on the device.
  void KeepInputIfInPlace_gpu(const Blob<Dtype>& bottom, const Blob<Dtype>& top);
  const Dtype* ForwardInput_gpu(const Blob<Dtype>& bottom);
#endif

 private:
  std::vector<Dtype> input_copy_;
  bool input_kept_ = false;
#ifdef DOPPIO_WITH_CUDA
  Blob<Dtype> input_copy_gpu_;
  bool input_kept_gpu_ = false;
#endif
};

}  // namespace doppio
