#pragma once

#include <vector>

#include "doppio/core/common.hpp"

namespace doppio {

// Replaces every data-reading layer (LayerTraits::reads_data: Data, ImageData, HDF5Data,
// WindowData and MemoryData) by a constant DummyData layer of the same shape (images, then
// labels), so a net can be timed or smoke-tested without its data files (or, for MemoryData,
// without a program feeding it). batch > 0 overrides the batch size of those layers and of
// Input layers. image_shape is C,H,W of one image; when empty it is memory_data_param's, or
// taken from transform_param.crop_size (3 x crop x crop), and a layer without either is an
// Error.
NetParameter WithSyntheticInputs(const NetParameter& param, int batch,
                                 const std::vector<int>& image_shape);

}  // namespace doppio
