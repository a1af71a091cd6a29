#pragma once

#ifdef DOPPIO_WITH_CUDNN

#include <string>
#include <vector>

#include "doppio/layers/relu_layer.hpp"
#include "doppio/util/cudnn.hpp"

namespace doppio {

// ReLU on cuDNN (engine CUDNN, the default on the GPU) when negative_slope is 0; a leaky ReLU uses
// the CAFFE engine. On the CPU it is the CAFFE ReLULayer.
template <typename Dtype>
class CudnnReLULayer : public ReLULayer<Dtype> {
 public:
  using typename ReLULayer<Dtype>::BlobVec;
  explicit CudnnReLULayer(const LayerParameter& param)
      : ReLULayer<Dtype>(param), activation_(CUDNN_ACTIVATION_RELU) {}

  static std::string Unsupported(const LayerParameter& param);

 protected:
  void Forward_gpu(const BlobVec& bottom, const BlobVec& top) override;
  void Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override;

 private:
  CudnnActivation activation_;
};

}  // namespace doppio

#endif  // DOPPIO_WITH_CUDNN
