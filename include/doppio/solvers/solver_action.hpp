#pragma once

#include <functional>

namespace doppio {

// What the solver should do when it next checks for outside requests (signals, a
// coordinating process): nothing, stop after the current iteration, snapshot and go on, or
// snapshot and stop (a stop that met a snapshot request).
enum class SolverAction { NONE, STOP, SNAPSHOT, SNAPSHOT_AND_STOP };

inline bool Stops(SolverAction action) {
  return action == SolverAction::STOP || action == SolverAction::SNAPSHOT_AND_STOP;
}
inline bool Snapshots(SolverAction action) {
  return action == SolverAction::SNAPSHOT || action == SolverAction::SNAPSHOT_AND_STOP;
}
inline SolverAction MakeAction(bool stop, bool snapshot) {
  if (stop) return snapshot ? SolverAction::SNAPSHOT_AND_STOP : SolverAction::STOP;
  return snapshot ? SolverAction::SNAPSHOT : SolverAction::NONE;
}
// Two requests that meet (two signals, a request kept from between test batches and one at
// the end of the iteration, two ranks'): neither is lost, so a stop beats a snapshot's
// "go on" but a snapshot asked for is still written before stopping. The enum's numbers are
// no order.
inline SolverAction CombineActions(SolverAction a, SolverAction b) {
  return MakeAction(Stops(a) || Stops(b), Snapshots(a) || Snapshots(b));
}

// Polled once per iteration (and once per test batch); must be cheap.
using ActionFunction = std::function<SolverAction()>;

}  // namespace doppio
