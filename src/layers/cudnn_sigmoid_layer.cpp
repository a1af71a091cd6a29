#include "doppio/layers/cudnn_sigmoid_layer.hpp"

#ifdef DOPPIO_WITH_CUDNN

#include "doppio/core/layer_registry.hpp"

namespace doppio {

DOPPIO_INSTANTIATE_CLASS(CudnnSigmoidLayer);
DOPPIO_REGISTER_LAYER_ENGINE(Sigmoid, CUDNN, CudnnSigmoidLayer);

}  // namespace doppio

#endif  // DOPPIO_WITH_CUDNN
