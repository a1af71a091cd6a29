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

// The training-time sibling: the gradients (diffs) of a net's activations share memory where
// they are not alive at once in Backward, which Caffe does not do. A diff lives from the first
// layer in backward order that writes it (a consumer propagating to it) to the last that reads
// it (its producer); after Backward only the parameters' gradients (the arena, not touched)
// and the diffs kept apart hold their values: the net's inputs and outputs, the tops of layers
// without bottoms, and any diff read before it is written (a loss weight). So it is for nets
// whose intermediate gradients nobody reads after Backward (`doppio train`, `doppio time`);
// pycaffe's solvers keep Caffe's behaviour. Nets with oneDNN layers (but for its Splits) keep
// their diffs: its Eltwise lends a diff to a layer that reads it outside this plan, and its
// layers keep blocked layouts in their buffers, which a view refuses. The plan holds for the
// shapes the net has now, like ShareActivationMemory's. Returns the bytes saved.
template <typename Dtype>
std::size_t ShareDiffMemory(Net<Dtype>* net);

}  // namespace doppio
