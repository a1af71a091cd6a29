#pragma once

#include <string>

#include "doppio/core/common.hpp"

namespace doppio {

// Asks for `engine` (CAFFE, CUDNN, ONEDNN) in every layer that it can run: the engine field
// of the parameters message named after the layer's type (convolution_param for
// Convolution, inner_product_param for InnerProduct) is set where the registry would honour
// it, and left as it was elsewhere. So one prototxt is timed or compared on either engine.
// Error for an engine name no engine field knows.
NetParameter WithEngine(const NetParameter& param, const std::string& engine);

}  // namespace doppio
