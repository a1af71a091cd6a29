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

// "123.4 MB": bytes in decimal megabytes, as Caffe's and the benchmarks' tables print them.
std::string FormatMegabytes(std::size_t bytes);

}  // namespace doppio
