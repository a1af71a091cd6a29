#include "doppio/layers/cudnn_softmax_layer.hpp"

#ifdef DOPPIO_WITH_CUDNN

#include "doppio/core/layer_registry.hpp"

namespace doppio {

DOPPIO_INSTANTIATE_CLASS(CudnnSoftmaxLayer);
DOPPIO_REGISTER_LAYER_ENGINE(Softmax, CUDNN, CudnnSoftmaxLayer);

}  // namespace doppio

#endif  // DOPPIO_WITH_CUDNN
