#include "memory_report.hpp"

#include <glog/logging.h>

#include <sstream>

#include "doppio/device/gpu_context.hpp"
#include "doppio/util/host_workspace.hpp"
#include "doppio/util/memory_usage.hpp"

namespace doppio {

MemoryReport MeasureMemory(const std::vector<const Net<float>*>& nets, GpuContext* gpu) {
  MemoryReport report;
  for (const Net<float>* net : nets) {
    report.parameter_bytes += net->parameter_bytes();
    report.activation_bytes += net->activation_bytes();
  }
#ifdef DOPPIO_WITH_CUDA
  if (gpu) {
    report.device = true;
    report.workspace_bytes = gpu->workspace_size();
    report.peak_bytes = gpu->allocator().peak_bytes_held();
    return report;
  }
#endif
  report.workspace_bytes = HostWorkspaceBytes();
  report.peak_bytes = ReadHostMemoryUsage().peak_resident_bytes;
  return report;
}

std::string FormatMemoryReport(const MemoryReport& report) {
  const std::size_t needed = report.needed_bytes();
  std::ostringstream line;
  line << "Peak " << (report.device ? "device" : "host")
       << " memory: " << FormatMebibytes(report.peak_bytes) << "; the net needs "
       << FormatMebibytes(needed) << " (parameters " << FormatMebibytes(report.parameter_bytes)
       << ", activations " << FormatMebibytes(report.activation_bytes) << ", workspace "
       << FormatMebibytes(report.workspace_bytes) << "), ";
  if (report.peak_bytes >= needed) {
    line << "overhead " << FormatMebibytes(report.peak_bytes - needed);
  } else {
    // Buffers are resident only where written (an arena diff no backward reached).
    line << "of which " << FormatMebibytes(needed - report.peak_bytes) << " never touched";
  }
  return line.str();
}

void LogMemoryReport(const std::vector<const Net<float>*>& nets, GpuContext* gpu) {
  LOG(INFO) << FormatMemoryReport(MeasureMemory(nets, nullptr));
  if (gpu) LOG(INFO) << FormatMemoryReport(MeasureMemory(nets, gpu));
}

}  // namespace doppio
