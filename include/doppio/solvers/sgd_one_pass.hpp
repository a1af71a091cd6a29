#pragma once

#include <cstddef>
#include <vector>

#ifdef DOPPIO_WITH_CUDA
#include "doppio/device/gpu_context.hpp"
#endif

namespace doppio {

// One learnable parameter's run of the parameter arena, for the one-pass update below.
template <typename Dtype>
struct SgdSegment {
  std::size_t end;  // one past its last element in the arena
  Dtype rate;       // the learning rate times the parameter's lr_mult
  Dtype decay;      // weight_decay times its decay_mult
};

// Caffe's momentum SGD step over the whole arena in one pass: per element of a segment, what
// SGDSolver's per-parameter calls compute one after another, in the same order and precision:
//   d = diff * grad_scale (skipped at 1); d = decay * r(w) + d (skipped at decay 0), where
//   r(w) is w (L2) or its sign (L1); h = rate * d + momentum * h; diff = h; w = w - h.
// One read and one write of the weights, the gradients and the history instead of four passes
// and one launch per parameter. Returns whether every new weight is finite (Net::Update's
// divergence check). The segments cover [0, n) in order.
template <typename Dtype>
bool cpu_sgd_one_pass(const std::vector<SgdSegment<Dtype>>& segments, Dtype grad_scale,
                      Dtype momentum, bool l1, Dtype* weights, Dtype* diff, Dtype* history);
#ifdef DOPPIO_WITH_CUDA
// The same as one kernel on the context's stream; waits for its finite flag.
template <typename Dtype>
bool gpu_sgd_one_pass(GpuContext& gpu, const std::vector<SgdSegment<Dtype>>& segments,
                      Dtype grad_scale, Dtype momentum, bool l1, Dtype* weights, Dtype* diff,
                      Dtype* history);
#endif

}  // namespace doppio
