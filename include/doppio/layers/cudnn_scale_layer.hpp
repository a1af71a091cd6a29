#pragma once

#ifdef DOPPIO_WITH_CUDNN

#include <vector>

#include "doppio/core/layer_fusion.hpp"
#include "doppio/layers/scale_layer.hpp"

namespace doppio {

// Scale's CUDNN engine: the CAFFE ScaleLayer, which the fusion pass (cudnn_fusion.cpp) can
// fold into the cuDNN BatchNorm before it as cuDNN's gamma and beta. Fused, its GPU Forward
// and Backward do nothing: the BatchNorm computes its output and adds its parameter gradients
// to its blobs. cuDNN has no call for a Scale alone, so unfused, and on the CPU, it runs
// Doppio's kernels.
template <typename Dtype>
class CudnnScaleLayer : public ScaleLayer<Dtype>, public FusionGuest {
 public:
  using typename ScaleLayer<Dtype>::BlobVec;
  explicit CudnnScaleLayer(const LayerParameter& param) : ScaleLayer<Dtype>(param) {}

 protected:
  void Forward_gpu(const BlobVec& bottom, const BlobVec& top) override;
  void Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override;
};

}  // namespace doppio

#endif  // DOPPIO_WITH_CUDNN
