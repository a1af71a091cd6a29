#include "doppio/layers/cudnn_tanh_layer.hpp"

#ifdef DOPPIO_WITH_CUDNN

#include "doppio/core/layer_registry.hpp"

namespace doppio {

DOPPIO_INSTANTIATE_CLASS(CudnnTanHLayer);
DOPPIO_REGISTER_LAYER_ENGINE(TanH, CUDNN, CudnnTanHLayer);

}  // namespace doppio

#endif  // DOPPIO_WITH_CUDNN
