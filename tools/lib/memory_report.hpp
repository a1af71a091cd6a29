#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "doppio/core/net.hpp"

namespace doppio {

class GpuContext;

// What the nets of a run need, next to what the process used, so that a user sees the
// overhead. The needs follow Caffe's accounting: the parameter arena (data and diff),
// every activation buffer (data and, where the net runs backward, diff; shared ones once),
// and the scratch the layers share (this thread's host workspace, or the GPU context's).
struct MemoryReport {
  std::size_t parameter_bytes = 0;
  std::size_t activation_bytes = 0;
  std::size_t workspace_bytes = 0;
  // Host: the process's resident high-water mark. Device: the most the allocator held.
  std::size_t peak_bytes = 0;
  bool device = false;

  std::size_t needed_bytes() const { return parameter_bytes + activation_bytes + workspace_bytes; }
};

// The host report (gpu null) or the device report for the nets run on `gpu`. Every net's
// arena counts: a test net keeps its own even while it shares the train net's weights.
MemoryReport MeasureMemory(const std::vector<const Net<float>*>& nets, GpuContext* gpu);

// One log line, e.g. "Peak host memory: 637.5 MiB; the net needs 561.3 MiB (parameters
// 465.1 MiB, activations 86.3 MiB, workspace 9.9 MiB), overhead 76.2 MiB".
std::string FormatMemoryReport(const MemoryReport& report);

// Logs the host report and, for nets on a GPU, the device report.
void LogMemoryReport(const std::vector<const Net<float>*>& nets, GpuContext* gpu);

}  // namespace doppio
