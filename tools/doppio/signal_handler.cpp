#include "signal_handler.hpp"

#include <glog/logging.h>
#include <signal.h>

#include <csignal>

#include "doppio/util/error.hpp"

namespace doppio {

namespace {

volatile std::sig_atomic_t g_got_sigint = 0;
volatile std::sig_atomic_t g_got_sighup = 0;
bool g_installed = false;
struct sigaction g_old_sigint;
struct sigaction g_old_sigterm;
struct sigaction g_old_sighup;

extern "C" void HandleSignal(int signal_number) {
  if (signal_number == SIGHUP) {
    g_got_sighup = 1;
  } else {
    g_got_sigint = 1;
  }
}

}  // namespace

SolverAction ParseSolverAction(const std::string& value, const std::string& flag) {
  if (value == "stop") return SolverAction::STOP;
  if (value == "snapshot") return SolverAction::SNAPSHOT;
  if (value == "none") return SolverAction::NONE;
  DOPPIO_FAIL() << "--" << flag << " must be stop, snapshot or none, not '" << value << "'";
  return SolverAction::NONE;
}

SignalHandler::SignalHandler(SolverAction sigint_effect, SolverAction sighup_effect)
    : sigint_effect_(sigint_effect), sighup_effect_(sighup_effect) {
  CHECK(!g_installed) << "only one SignalHandler may be active";
  g_installed = true;
  g_got_sigint = 0;
  g_got_sighup = 0;
  struct sigaction action = {};
  action.sa_handler = &HandleSignal;
  // Restart interrupted system calls: reads in data layers must not fail with EINTR.
  action.sa_flags = SA_RESTART;
  sigfillset(&action.sa_mask);
  CHECK_EQ(sigaction(SIGINT, &action, &g_old_sigint), 0);
  CHECK_EQ(sigaction(SIGTERM, &action, &g_old_sigterm), 0);
  CHECK_EQ(sigaction(SIGHUP, &action, &g_old_sighup), 0);
}

SignalHandler::~SignalHandler() {
  sigaction(SIGINT, &g_old_sigint, nullptr);
  sigaction(SIGTERM, &g_old_sigterm, nullptr);
  sigaction(SIGHUP, &g_old_sighup, nullptr);
  g_installed = false;
}

SolverAction SignalHandler::CheckForSignals() const {
  SolverAction action = SolverAction::NONE;
  if (g_got_sighup) {
    g_got_sighup = 0;
    LOG(INFO) << "Caught SIGHUP";
    action = sighup_effect_;
  }
  if (g_got_sigint) {
    g_got_sigint = 0;
    LOG(INFO) << "Caught SIGINT or SIGTERM";
    action = CombineActions(action, sigint_effect_);
  }
  return action;
}

ActionFunction SignalHandler::GetActionFunction() {
  return [this] { return CheckForSignals(); };
}

}  // namespace doppio
