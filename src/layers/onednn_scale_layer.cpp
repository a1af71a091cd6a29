#include "doppio/layers/onednn_scale_layer.hpp"

#ifdef DOPPIO_WITH_ONEDNN

#include "doppio/core/layer_registry.hpp"

namespace doppio {

void OnednnScaleLayer::Forward_cpu(const BlobVec& bottom, const BlobVec& top) {
  if (fused()) {
    CheckHostRan(this->Describe());
    return;
  }
  ScaleLayer<float>::Forward_cpu(bottom, top);
}

void OnednnScaleLayer::Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                                    const BlobVec& bottom) {
  if (fused()) return;
  ScaleLayer<float>::Backward_cpu(top, propagate_down, bottom);
}

DOPPIO_REGISTER_LAYER_ENGINE_FLOAT_IF(Scale, ONEDNN, OnednnScaleLayer, nullptr);

}  // namespace doppio

#endif  // DOPPIO_WITH_ONEDNN
