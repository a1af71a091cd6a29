// Caffe layer types that Doppio's schema parses but Doppio does not run. Each is registered
// so that a net using one fails to build with the reason, the same way for every such type,
// rather than as an unknown type. Those that read data are data sources all the same, so
// `doppio time` can still time a net that uses them (it replaces them with constant inputs).
#include "doppio/core/layer_registry.hpp"

namespace doppio {

REGISTER_UNSUPPORTED_LAYER(
    WindowData, LayerTraits().ReadsData().Unsupported(
                    "WindowData layers are not supported; Doppio reads LMDB of Datum records "
                    "(type: \"Data\") and image lists (type: \"ImageData\")"));
REGISTER_UNSUPPORTED_LAYER(
    MemoryData, LayerTraits().ReadsData().Unsupported(
                    "MemoryData layers are not supported; give the net an Input layer, or "
                    "write the data to an LMDB (type: \"Data\")"));
REGISTER_UNSUPPORTED_LAYER(
    Python,
    LayerTraits().Unsupported("Python layers are not supported; Doppio has no Python interpreter"));
REGISTER_UNSUPPORTED_LAYER(Recurrent,
                           LayerTraits().Unsupported("recurrent layers are not supported"));
REGISTER_UNSUPPORTED_LAYER(RNN, LayerTraits().Unsupported("recurrent layers are not supported"));
REGISTER_UNSUPPORTED_LAYER(LSTM, LayerTraits().Unsupported("recurrent layers are not supported"));
REGISTER_UNSUPPORTED_LAYER(SPP, LayerTraits().Unsupported("SPP layers are not supported"));
REGISTER_UNSUPPORTED_LAYER(MVN, LayerTraits().Unsupported("MVN layers are not supported"));
REGISTER_UNSUPPORTED_LAYER(Swish, LayerTraits().Unsupported("Swish layers are not supported"));
REGISTER_UNSUPPORTED_LAYER(Clip, LayerTraits().Unsupported("Clip layers are not supported"));
REGISTER_UNSUPPORTED_LAYER(Parameter,
                           LayerTraits().Unsupported("Parameter layers are not supported"));

}  // namespace doppio
