#pragma once

#include <string>
#include <vector>

#include "doppio/layers/recurrent_layer.hpp"

namespace doppio {

// Caffe's LSTM, over RecurrentLayer's unrolled net: for each step t the gate inputs
//   W_hc (cont_t h_{t-1}) + W_xc x_t + b_c [+ W_xc_static x_static]
// (4 x num_output: input, forget, output gates and candidate) go through an LSTMUnit, which
// gives the cell state c_t and the hidden state h_t. The top is h (T, N, num_output); the
// recurrent state is h and c ("h_0", "c_0" in; "h_T", "c_T" out). Parameter blobs, in
// Caffe's order: W_xc, b_c, [W_xc_static,] W_hc.
template <typename Dtype>
class LSTMLayer : public RecurrentLayer<Dtype> {
 public:
  explicit LSTMLayer(const LayerParameter& param) : RecurrentLayer<Dtype>(param) {}
  const char* type() const override { return "LSTM"; }

 protected:
  void FillUnrolledNet(NetParameter* net) const override;
  std::vector<std::string> RecurrentInputBlobNames() const override { return {"h_0", "c_0"}; }
  std::vector<BlobShape> RecurrentInputShapes() const override;
  std::vector<std::string> RecurrentOutputBlobNames() const override {
    return {"h_" + std::to_string(this->T_), "c_T"};
  }
  std::vector<std::string> OutputBlobNames() const override { return {"h"}; }
};

}  // namespace doppio
