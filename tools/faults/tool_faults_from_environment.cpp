#include "../doppio/tool_faults.hpp"
#include "test_faults.hpp"

namespace doppio {

void InstallToolFaults() { InstallWriteFaultFromEnvironment(); }

FaultInjection ToolFaultInjection() { return FaultInjectionFromEnvironment(); }

}  // namespace doppio
