#pragma once

#include <string>
#include <vector>

#include "doppio/layers/recurrent_layer.hpp"

namespace doppio {

// Caffe's RNN (Elman network), over RecurrentLayer's unrolled net: for each step t,
//   h_t = tanh(W_hh (cont_t h_{t-1}) + W_xh x_t + b_h [+ W_xh_static x_static])
//   o_t = tanh(W_ho h_t + b_o)
// The top is o (T, N, num_output); the recurrent state is h ("h_0" in, "h_T" out). Parameter
// blobs, in Caffe's order: W_xh, b_h, [W_xh_static,] W_hh, W_ho, b_o.
template <typename Dtype>
class RNNLayer : public RecurrentLayer<Dtype> {
 public:
  explicit RNNLayer(const LayerParameter& param) : RecurrentLayer<Dtype>(param) {}
  const char* type() const override { return "RNN"; }

 protected:
  void FillUnrolledNet(NetParameter* net) const override;
  std::vector<std::string> RecurrentInputBlobNames() const override { return {"h_0"}; }
  std::vector<BlobShape> RecurrentInputShapes() const override;
  std::vector<std::string> RecurrentOutputBlobNames() const override {
    return {"h_" + std::to_string(this->T_)};
  }
  std::vector<std::string> OutputBlobNames() const override { return {"o"}; }
};

}  // namespace doppio
