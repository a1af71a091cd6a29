#pragma once

#include <functional>

namespace doppio {

// What the solver should do when it next checks for outside requests (signals, a
// coordinating process): nothing, stop after the current iteration, or snapshot and go on.
enum class SolverAction { NONE, STOP, SNAPSHOT };

// Polled once per iteration (and once per test batch); must be cheap.
using ActionFunction = std::function<SolverAction()>;

}  // namespace doppio
