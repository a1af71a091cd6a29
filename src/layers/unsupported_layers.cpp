// Caffe layer types that Doppio's schema parses but Doppio does not run. Each is registered
// so that a net using one fails to build with the reason, the same way for every such type,
// rather than as an unknown type.
#include "doppio/core/layer_registry.hpp"

namespace doppio {

REGISTER_UNSUPPORTED_LAYER(
    Python,
    LayerTraits().Unsupported(
        "Python layers are not supported: Doppio embeds no Python interpreter, so "
        "python_param.module cannot be loaded. Write the layer in C++ (a class in src/layers/ "
        "registered with REGISTER_LAYER_CLASS), or compute what it produces beforehand and read "
        "it as data (an LMDB through type: \"Data\", or type: \"MemoryData\" fed from C++)"));
REGISTER_UNSUPPORTED_LAYER(
    Recurrent,
    LayerTraits().Unsupported("Recurrent layers are not supported: Recurrent is the abstract "
                              "base of Caffe's recurrent layers (Caffe has no such type either); "
                              "use type: \"RNN\" or type: \"LSTM\""));

}  // namespace doppio
