#include "tool_faults.hpp"

namespace doppio {

void InstallToolFaults() {}

FaultInjection ToolFaultInjection() { return FaultInjection(); }

}  // namespace doppio
