#pragma once

#include "doppio/parallel/fault_injection.hpp"

namespace doppio {

// The tool's deliberate failures, chosen when it is linked: the shipped doppio links
// no_faults.cpp (none, and no environment variable is read); its test build doppio_faults
// links tools/faults/tool_faults_from_environment.cpp instead, so that the tests of the
// failure paths run the same commands.

// Called once by main, before any command runs.
void InstallToolFaults();
// The failure that `doppio train` arms in its DistributedSolver.
FaultInjection ToolFaultInjection();

}  // namespace doppio
