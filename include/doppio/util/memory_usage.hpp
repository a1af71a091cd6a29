#pragma once

#include <cstddef>
#include <string>

namespace doppio {

// This process's resident host memory, as the kernel counts it: what `top` shows and what
// an out-of-memory kill is decided by.
struct HostMemoryUsage {
  std::size_t resident_bytes = 0;
  // The high-water mark since the process started (VmHWM, ru_maxrss).
  std::size_t peak_resident_bytes = 0;
};

// Reads /proc/self/status; where it is missing (not Linux), getrusage's peak alone.
HostMemoryUsage ReadHostMemoryUsage();

// "123.4 MiB": bytes in units of 2^20, the unit ru_maxrss (kilobytes of 1024) converts to
// without rounding, spelled out so that nobody reads it as 10^6.
std::string FormatMebibytes(std::size_t bytes);

}  // namespace doppio
