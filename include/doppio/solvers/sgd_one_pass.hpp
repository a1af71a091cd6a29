#pragma once

#include <cstddef>
#include <vector>

#include "doppio/util/host_device.hpp"

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

// One element's step (below), on the host and in the kernel: returns the new weight.
template <typename Dtype>
DOPPIO_HOST_DEVICE inline Dtype SgdOnePassStep(const SgdSegment<Dtype>& s, Dtype grad_scale,
                                               Dtype momentum, bool l1, Dtype* weight, Dtype* diff,
                                               Dtype* history) {
  Dtype d = grad_scale == Dtype(1) ? *diff : *diff * grad_scale;
  if (s.decay != 0) {
    const Dtype w = *weight;
    const Dtype r = l1 ? Dtype((w > 0) - (w < 0)) : w;
    d = s.decay * r + d;
  }
  const Dtype h = s.rate * d + momentum * *history;
  *history = h;
  *diff = h;
  *weight = *weight + Dtype(-1) * h;
  return *weight;
}

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
