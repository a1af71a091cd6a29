#include "doppio/layers/cudnn_lrn_layer.hpp"

#ifdef DOPPIO_WITH_CUDNN

#include <sstream>

#include "doppio/core/layer_registry.hpp"

namespace doppio {

template <typename Dtype>
CudnnLRNLayer<Dtype>::~CudnnLRNLayer() {
  if (lrn_desc_) cudnnDestroyLRNDescriptor(lrn_desc_);
}

template <typename Dtype>
std::string CudnnLRNLayer<Dtype>::Unsupported(const LayerParameter& param) {
  const LRNParameter& p = param.lrn_param();
  std::ostringstream why;
  if (p.norm_region() != LRNParameter::ACROSS_CHANNELS) {
    why << "cuDNN LRN normalises across channels only";
  } else if (p.local_size() < CUDNN_LRN_MIN_N || p.local_size() > CUDNN_LRN_MAX_N) {
    why << "cuDNN LRN takes local_size " << CUDNN_LRN_MIN_N << " to " << CUDNN_LRN_MAX_N << ", not "
        << p.local_size();
  } else if (p.k() < CUDNN_LRN_MIN_K) {
    why << "cuDNN LRN needs k >= " << CUDNN_LRN_MIN_K << ", not " << p.k();
  } else if (p.beta() < CUDNN_LRN_MIN_BETA) {
    why << "cuDNN LRN needs beta >= " << CUDNN_LRN_MIN_BETA << ", not " << p.beta();
  }
  return why.str();
}

DOPPIO_INSTANTIATE_CLASS(CudnnLRNLayer);
DOPPIO_REGISTER_LAYER_ENGINE_IF(LRN, CUDNN, CudnnLRNLayer, CudnnLRNLayer<float>::Unsupported);

}  // namespace doppio

#endif  // DOPPIO_WITH_CUDNN
