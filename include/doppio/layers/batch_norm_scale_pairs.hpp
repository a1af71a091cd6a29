#pragma once

#include <utility>
#include <vector>

#include "doppio/core/net.hpp"

namespace doppio {

// The (BatchNorm, Scale) layer index pairs of `net` that one batch normalization call with
// gamma and beta computes exactly, forward and backward (the cuDNN engine's fusion pass,
// cudnn_fusion.cpp, fuses those whose layers run on cuDNN):
// - the BatchNorm normalizes with batch statistics and has at least two axes;
// - the Scale is the first layer to read the BatchNorm's top and runs in place on it (so no
//   layer and no user sees the values in between: a second reader would need a Split, and
//   the net refuses an in-place layer on a blob another layer also reads);
// - the Scale learns one factor per channel (one bottom, axis 1, one axis), maybe a bias;
// - where the Scale needs Backward, so does the BatchNorm, which then computes the Scale's
//   parameter gradients.
template <typename Dtype>
std::vector<std::pair<int, int>> BatchNormScalePairs(const Net<Dtype>& net);

}  // namespace doppio
