// Caffe layer types that Doppio's schema parses but Doppio does not run. Each is registered
// so that a net using one fails to build with the reason, the same way for every such type,
// rather than as an unknown type.
#include "doppio/core/layer_registry.hpp"

namespace doppio {

REGISTER_UNSUPPORTED_LAYER(
    Recurrent,
    LayerTraits().Unsupported("Recurrent layers are not supported: Recurrent is the abstract "
                              "base of Caffe's recurrent layers (Caffe has no such type either); "
                              "use type: \"RNN\" or type: \"LSTM\""));

}  // namespace doppio
