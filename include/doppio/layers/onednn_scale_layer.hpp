#pragma once

#ifdef DOPPIO_WITH_ONEDNN

#include <vector>

#include "doppio/layers/onednn_fusion.hpp"
#include "doppio/layers/scale_layer.hpp"

namespace doppio {

// Scale's ONEDNN engine (float): the CAFFE ScaleLayer, which the fusion pass
// (onednn_fusion.cpp) can fold into the oneDNN BatchNorm before it, as that primitive's scale
// and shift. Fused, its Forward and Backward do nothing: the BatchNorm computes its output
// and accumulates its parameter gradients into its blobs. oneDNN 2.6 has no primitive for
// a Scale alone that would beat the CAFFE loops (its parameter gradient is a product, then a
// reduction over batch and space), so unfused it runs those.
class OnednnScaleLayer : public ScaleLayer<float>, public OnednnFusionGuest {
 public:
  explicit OnednnScaleLayer(const LayerParameter& param) : ScaleLayer<float>(param) {}

 protected:
  void Forward_cpu(const BlobVec& bottom, const BlobVec& top) override;
  void Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override;
};

}  // namespace doppio

#endif  // DOPPIO_WITH_ONEDNN
