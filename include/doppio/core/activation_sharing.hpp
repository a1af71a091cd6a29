#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "doppio/core/net.hpp"

namespace doppio {

// Lets the activations of a forward-only net (a TEST net, `doppio test`) share memory, which
// Caffe does not do: a blob whose last reader has run is dead for the rest of the pass, so a
// later layer's top may reuse its memory. Blobs that outlive the pass stay apart: the net's
// outputs, the tops of layers without bottoms (data layers fill them, some from their own
// buffers), and the blobs named in `keep` (those a caller reads by name after Forward).
// Blobs that alias one buffer (in-place layers, Split, Flatten, Reshape) are planned as that
// one buffer, alive from its first writer to its last reader.
//
// Only for a net that runs nothing but Forward: its Backward would read overwritten
// activations. The plan holds for the shapes the net has now; a blob that later grows past
// them gets a buffer of its own again. Returns the bytes saved. Error when `keep` names a
// blob the net does not have.
template <typename Dtype>
std::size_t ShareActivationMemory(Net<Dtype>* net, const std::vector<std::string>& keep = {});

}  // namespace doppio
