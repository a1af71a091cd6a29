#pragma once

#ifdef DOPPIO_WITH_CUDNN

#include <vector>

#include "doppio/device/cudnn.hpp"
#include "doppio/layers/softmax_layer.hpp"

namespace doppio {

// Softmax on cuDNN (engine CUDNN, the default on the GPU): the bottom is viewed as
// (outer, channels, inner, 1) and normalised over the channels (the softmax axis), with the
// maximum subtracted first (CUDNN_SOFTMAX_ACCURATE). On the CPU it is the CAFFE SoftmaxLayer.
template <typename Dtype>
class CudnnSoftmaxLayer : public SoftmaxLayer<Dtype> {
 public:
  using typename SoftmaxLayer<Dtype>::BlobVec;
  explicit CudnnSoftmaxLayer(const LayerParameter& param) : SoftmaxLayer<Dtype>(param) {}

 protected:
  void Forward_gpu(const BlobVec& bottom, const BlobVec& top) override;
  void Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override;

 private:
  CudnnTensorDesc desc_;
};

}  // namespace doppio

#endif  // DOPPIO_WITH_CUDNN
