#pragma once

#include <string>

namespace doppio {

// Deliberate failures, for tests of the failure paths (a snapshot write that breaks
// half-way must leave the previous snapshot intact). The library and the shipped doppio
// tool install none and read no environment variable for them; tests install their own,
// and the test build of the tool (doppio_faults, tools/faults/) installs one driven by
// DOPPIO_FAULT_WRITE.
class FaultPoints {
 public:
  virtual ~FaultPoints() = default;
  // True: the atomic write of `path` fails half-way with ENOSPC.
  virtual bool FailWrite(const std::string& path) const = 0;
};

// Installs `points` (not owned; it must outlive every write) for the whole process. A
// process-wide hook, not a parameter: the writes it breaks lie under every snapshot and
// weights file, reached from the solver, the net and the tools, and threading a test-only
// argument through all of them would put it in every signature. Set once, before the
// writes it affects; a second call is a programming error (CHECK).
void InstallFaultPoints(const FaultPoints* points);
// The installed fault points; null: none.
const FaultPoints* InstalledFaultPoints();

}  // namespace doppio
