#pragma once

#ifdef DOPPIO_WITH_CUDNN

#include <vector>

#include "doppio/core/layer.hpp"
#include "doppio/device/cudnn.hpp"

namespace doppio {

// The GPU half shared by the element-wise layers that cuDNN runs as an activation (ReLU,
// Sigmoid, TanH): `Base` is the CAFFE layer, which keeps the CPU path, the set-up and the
// checks; only Forward_gpu and Backward_gpu go to cuDNN.
template <typename Base>
class CudnnActivationLayer : public Base {
 public:
  using typename Base::BlobVec;
  CudnnActivationLayer(const LayerParameter& param, cudnnActivationMode_t mode)
      : Base(param), activation_(mode) {}

 protected:
  void Forward_gpu(const BlobVec& bottom, const BlobVec& top) override;
  void Backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override;

 private:
  CudnnActivation activation_;
};

}  // namespace doppio

#endif  // DOPPIO_WITH_CUDNN
