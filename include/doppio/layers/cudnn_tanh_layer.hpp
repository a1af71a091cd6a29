#pragma once

#ifdef DOPPIO_WITH_CUDNN

#include <vector>

#include "doppio/layers/tanh_layer.hpp"
#include "doppio/util/cudnn.hpp"

namespace doppio {

// TanH on cuDNN (engine CUDNN, the default on the GPU). On the CPU it is the CAFFE TanHLayer.
template <typename Dtype>
class CudnnTanHLayer : public TanHLayer<Dtype> {
 public:
  using typename TanHLayer<Dtype>::BlobVec;
  explicit CudnnTanHLayer(const LayerParameter& param)
      : TanHLayer<Dtype>(param), activation_(CUDNN_ACTIVATION_TANH) {}

 protected:
  void Forward_gpu(const BlobVec& bottom, const BlobVec& top) override;
  void Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override;

 private:
  CudnnActivation activation_;
};

}  // namespace doppio

#endif  // DOPPIO_WITH_CUDNN
