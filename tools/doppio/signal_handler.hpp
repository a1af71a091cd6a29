#pragma once

#include <string>

#include "doppio/solvers/solver_action.hpp"

namespace doppio {

// Turns SIGINT, SIGTERM and SIGHUP into solver actions. The handlers only set flags (that is
// all a signal handler may safely do); the solver polls GetActionFunction() after each
// iteration. SIGTERM has SIGINT's effect. Only one SignalHandler may exist at a time; the
// previous handlers come back when it is destroyed.
class SignalHandler {
 public:
  SignalHandler(SolverAction sigint_effect, SolverAction sighup_effect);
  ~SignalHandler();
  SignalHandler(const SignalHandler&) = delete;
  SignalHandler& operator=(const SignalHandler&) = delete;

  // The action for the signals received since the last call, their effects combined
  // (CombineActions: a SIGINT that stops and a SIGHUP that snapshots, both since the last
  // poll, snapshot and stop); NONE when there were none or their effect is none.
  SolverAction CheckForSignals() const;
  ActionFunction GetActionFunction();

 private:
  SolverAction sigint_effect_;
  SolverAction sighup_effect_;
};

// Parses "stop", "snapshot" or "none"; throws Error naming `flag` otherwise.
SolverAction ParseSolverAction(const std::string& value, const std::string& flag);

}  // namespace doppio
