#pragma once

#ifdef DOPPIO_WITH_CUDNN

#include <cudnn.h>

#include <string>
#include <vector>

#include "doppio/device/cudnn.hpp"
#include "doppio/layers/pooling_layer.hpp"

namespace doppio {

// AVE pooling on cuDNN (engine CUDNN, the default on the GPU when it applies). cuDNN sizes
// the output by flooring; where Caffe's ceiling rule gives a larger output for the current
// input, the layer runs Doppio's own GPU kernels instead, so the results are always Caffe's.
// With floor-sized windows the AVE divisor (padding counted) is the same in both. In 16 bits
// (BF16, FP16) AVE runs Doppio's kernels too, which read and write the blobs' 16-bit storage.
// MAX always runs Doppio's own kernels, which route the gradient by the argmax recorded in
// Forward: cuDNN's max backward finds the maximum again by comparing the input with the
// layer's output, and a later layer running in place on that output (Dropout, Scale, ...)
// changes it, which misroutes or drops the gradient (Caffe made the same choice for the
// same reason). On the CPU it is the CAFFE PoolingLayer.
template <typename Dtype>
class CudnnPoolingLayer : public PoolingLayer<Dtype> {
 public:
  using typename PoolingLayer<Dtype>::BlobVec;
  explicit CudnnPoolingLayer(const LayerParameter& param) : PoolingLayer<Dtype>(param) {}
  ~CudnnPoolingLayer() override;

  // Why a configuration needs the CAFFE engine ("" when cuDNN can run it).
  static std::string Unsupported(const LayerParameter& param);

 protected:
  void Forward_gpu(const BlobVec& bottom, const BlobVec& top) override;
  void Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override;

 private:
  // Sets the descriptors; false when cuDNN's output shape differs from the layer's.
  bool Prepare();

  bool used_cudnn_ = false;  // by the last Forward_gpu
  cudnnPoolingDescriptor_t pooling_desc_ = nullptr;
  CudnnTensorDesc bottom_desc_;
  CudnnTensorDesc top_desc_;
};

}  // namespace doppio

#endif  // DOPPIO_WITH_CUDNN
