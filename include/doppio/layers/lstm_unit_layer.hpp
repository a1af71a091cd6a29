#pragma once

#include <vector>

#include "doppio/core/layer.hpp"

namespace doppio {

// One step of an LSTM, as Caffe's LSTMUnit. Bottoms: the previous cell state c_prev (1, N, D),
// the gate inputs (1, N, 4D) holding the pre-activations of the input, forget and output
// gates and of the candidate, in that order, and the sequence-continuation markers cont
// (1, N). Tops: the cell state c and the hidden state h, both (1, N, D):
//   i = sigmoid(i'), f = cont * sigmoid(f') (0 where cont is 0), o = sigmoid(o'), g = tanh(g')
//   c = f * c_prev + i * g,  h = o * tanh(c)
// cont takes no gradient; Backward follows Caffe's formulas, exact when cont is 0 or 1.
template <typename Dtype>
class LSTMUnitLayer : public Layer<Dtype> {
 public:
  using BlobVec = typename Layer<Dtype>::BlobVec;

  explicit LSTMUnitLayer(const LayerParameter& param) : Layer<Dtype>(param) {}
  void Reshape(const BlobVec& bottom, const BlobVec& top) override;
  const char* type() const override { return "LSTMUnit"; }

  int ExactNumBottomBlobs() const override { return 3; }
  int ExactNumTopBlobs() const override { return 2; }
  bool AllowForceBackward(int bottom_index) const override { return bottom_index != 2; }

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
  void CheckContNotPropagated(const std::vector<bool>& propagate_down) const;

  int hidden_dim_ = 0;
  // Backward's scratch for the bottom gradients not asked for.
  Blob<Dtype> c_prev_diff_scratch_;
  Blob<Dtype> gates_diff_scratch_;
};

}  // namespace doppio
