#pragma once

#include "doppio/core/net.hpp"

namespace doppio {

// Caffe's debug_info log lines, with Caffe's wording so that its tools read them: the mean
// absolute value of what a layer wrote, to see where a net starts to blow up or vanish.
// After layer `layer_id`'s Forward: each top blob's data and each parameter's data.
template <typename Dtype>
void LogForwardDebugInfo(const Net<Dtype>& net, int layer_id);
// After its Backward: each bottom blob's diff that backward wrote, each parameter's diff.
template <typename Dtype>
void LogBackwardDebugInfo(const Net<Dtype>& net, int layer_id);
// Before the update is applied: each learnable parameter's data and its update (diff).
template <typename Dtype>
void LogUpdateDebugInfo(const Net<Dtype>& net);

}  // namespace doppio
