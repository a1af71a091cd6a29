#pragma once

#include <string>

#include "doppio/core/common.hpp"

namespace doppio {

// Returns `param` with a Split layer after every top blob that more than one bottom reads
// (or that is read and also weighted as a loss), so each consumer gets its own diff.
NetParameter InsertSplits(const NetParameter& param);

std::string SplitLayerName(const std::string& layer_name, const std::string& blob_name,
                           int blob_index);
std::string SplitBlobName(const std::string& layer_name, const std::string& blob_name,
                          int blob_index, int split_index);

}  // namespace doppio
