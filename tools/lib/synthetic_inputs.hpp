#pragma once

#include <vector>

#include "doppio/core/common.hpp"

namespace doppio {

// Replaces every data-reading layer (LayerTraits::reads_data: Data, ImageData, HDF5Data,
// WindowData and MemoryData) by a constant DummyData layer with the tops the layer would
// make, so a net can be timed or smoke-tested without reading its data while it runs (or,
// for MemoryData, without a program feeding it). batch > 0 overrides the batch size of those
// layers and of Input layers.
//
// The shape of each layer's tops, in this order: image_shape (C,H,W of one image, with
// scalar labels), when given; memory_data_param's; for a layer of the net's state (phase,
// level, stages), the layer's own set-up on its source when the source can be read (an
// LMDB's first Datum after crop, an HDF5 list's first file, an image list's first image
// after resize and crop, a window file's first image: the layer is set up once at batch 1
// and dropped before anything runs); 3 x crop x crop from transform_param.crop_size;
// otherwise an Error naming the layer, its source and why it could not be read. The layers
// of the state log where their shape came from. A layer outside the state is never read:
// without image_shape or a crop it stays as it is (a net of this state leaves it out).
NetParameter WithSyntheticInputs(const NetParameter& param, int batch,
                                 const std::vector<int>& image_shape);

}  // namespace doppio
