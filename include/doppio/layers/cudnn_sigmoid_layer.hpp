#pragma once

#ifdef DOPPIO_WITH_CUDNN

#include <vector>

#include "doppio/layers/sigmoid_layer.hpp"
#include "doppio/util/cudnn.hpp"

namespace doppio {

// Sigmoid on cuDNN (engine CUDNN, the default on the GPU). On the CPU it is the CAFFE SigmoidLayer.
template <typename Dtype>
class CudnnSigmoidLayer : public SigmoidLayer<Dtype> {
 public:
  using typename SigmoidLayer<Dtype>::BlobVec;
  explicit CudnnSigmoidLayer(const LayerParameter& param)
      : SigmoidLayer<Dtype>(param), activation_(CUDNN_ACTIVATION_SIGMOID) {}

 protected:
  void Forward_gpu(const BlobVec& bottom, const BlobVec& top) override;
  void Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override;

 private:
  CudnnActivation activation_;
};

}  // namespace doppio

#endif  // DOPPIO_WITH_CUDNN
