#include "doppio/layers/cudnn_scale_layer.hpp"

#ifdef DOPPIO_WITH_CUDNN

#include "doppio/core/layer_registry.hpp"

namespace doppio {

template <typename Dtype>
void CudnnScaleLayer<Dtype>::Forward_gpu(const BlobVec& bottom, const BlobVec& top) {
  if (fused()) {
    CheckHostRan(this->Describe());
    return;
  }
  ScaleLayer<Dtype>::Forward_gpu(bottom, top);
}

template <typename Dtype>
void CudnnScaleLayer<Dtype>::Backward_gpu(const BlobVec& top,
                                          const std::vector<bool>& propagate_down,
                                          const BlobVec& bottom) {
  if (fused()) return;
  ScaleLayer<Dtype>::Backward_gpu(top, propagate_down, bottom);
}

DOPPIO_INSTANTIATE_CLASS(CudnnScaleLayer);
DOPPIO_REGISTER_LAYER_ENGINE(Scale, CUDNN, CudnnScaleLayer);

}  // namespace doppio

#endif  // DOPPIO_WITH_CUDNN
