// The cuDNN engine's fusion pass: a BatchNorm followed by an in-place Scale (ResNet's and
// Inception-v2's pattern) runs as one cuDNN batch normalization call with the Scale's factor
// and bias as gamma and beta, forward and backward: two passes over the activations each way
// instead of four, and no copy of the Scale's input.
#ifdef DOPPIO_WITH_CUDNN

#include <glog/logging.h>

#include "doppio/core/layer_fusion.hpp"
#include "doppio/layers/batch_norm_scale_pairs.hpp"
#include "doppio/layers/cudnn_batch_norm_layer.hpp"
#include "doppio/layers/cudnn_scale_layer.hpp"

namespace doppio {
namespace {

template <typename Dtype>
void FuseBatchNormScale(const Net<Dtype>& net) {
  const auto& layers = net.layers();
  for (const auto& [i, k] : BatchNormScalePairs(net)) {
    auto* batch_norm = dynamic_cast<CudnnBatchNormLayer<Dtype>*>(layers[i].get());
    auto* scale = dynamic_cast<CudnnScaleLayer<Dtype>*>(layers[k].get());
    if (batch_norm == nullptr || scale == nullptr || batch_norm->fused() || scale->fused()) {
      continue;
    }
    batch_norm->FuseScale(layers[k].get());
    scale->FuseInto(*batch_norm, layers[i]->Describe());
    LOG(INFO) << "cuDNN fuses " << layers[k]->Describe() << " into " << layers[i]->Describe()
              << " (batch normalization with gamma and beta)";
  }
}

const LayerFusionRegisterer<float> kFloatPasses("CUDNN",
                                                {{"BatchNorm + Scale", FuseBatchNormScale<float>}});
const LayerFusionRegisterer<double> kDoublePasses("CUDNN", {{"BatchNorm + Scale",
                                                             FuseBatchNormScale<double>}});

}  // namespace
}  // namespace doppio

#endif  // DOPPIO_WITH_CUDNN
