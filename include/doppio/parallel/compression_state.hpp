#pragma once

#include <string>

#include "doppio/parallel/communicator.hpp"
#include "doppio/parallel/gradient_sync.hpp"

namespace doppio {

// The state of --grad_compression in a .solverstate (SolverState.compression, version 1):
// the method's canonical text, every rank's error-feedback residual and (top-k's momentum
// correction) velocity, the momentum corrected, and the state the ranks share (PowerSGD's Q,
// top-k's last step).

// Collective: rank 0 receives every rank's residuals and fills `state` (the other ranks
// leave it alone). Nothing happens when `sync` keeps no compression state.
template <typename Dtype>
void GatherCompressionState(Communicator& comm, const GradientSync<Dtype>& sync,
                            CompressionState* state);

// Local, on every rank (each has the whole state): installs this rank's residuals and the
// shared state. The same number of ranks continues exactly where the snapshot stopped. On
// another number of ranks every rank takes the mean of the saved residuals, so that what
// the ranks still owe adds up to the same contribution to the mean gradient (a warning says
// the run no longer repeats an uninterrupted one). Top-k state with a velocity resumed by a
// run that corrects no momentum (another solver, LARC) keeps the residuals and drops the
// velocities and the last step; the reverse keeps the residuals and starts those at zero;
// each with a warning that says so. Version 0 files (velocity after the residual in one blob)
// read the same. A state for another method, or none, is ignored with a warning (the
// residuals start at zero); one whose sizes do not fit the buckets is an Error naming `origin`.
template <typename Dtype>
void RestoreCompressionState(const SolverState& saved, int num_ranks, int rank,
                             const std::string& origin, GradientSync<Dtype>* sync);

}  // namespace doppio
