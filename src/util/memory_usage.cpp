#include "doppio/util/memory_usage.hpp"

#include <sys/resource.h>

#include <cstdio>
#include <fstream>
#include <sstream>

namespace doppio {

namespace {
// A "Name:   1234 kB" line of /proc/self/status, in bytes; 0 when absent.
std::size_t StatusKilobytes(const std::string& status, const std::string& name) {
  std::istringstream lines(status);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.compare(0, name.size() + 1, name + ":") != 0) continue;
    std::istringstream value(line.substr(name.size() + 1));
    std::size_t kilobytes = 0;
    value >> kilobytes;
    return kilobytes * 1024;
  }
  return 0;
}
}  // namespace

HostMemoryUsage ReadHostMemoryUsage() {
  HostMemoryUsage usage;
  std::ifstream file("/proc/self/status");
  if (file) {
    std::stringstream status;
    status << file.rdbuf();
    usage.resident_bytes = StatusKilobytes(status.str(), "VmRSS");
    usage.peak_resident_bytes = StatusKilobytes(status.str(), "VmHWM");
  }
  if (usage.peak_resident_bytes == 0) {
    rusage self{};
    // Linux and the BSDs report ru_maxrss in kilobytes.
    if (getrusage(RUSAGE_SELF, &self) == 0) {
      usage.peak_resident_bytes = static_cast<std::size_t>(self.ru_maxrss) * 1024;
    }
  }
  return usage;
}

std::string FormatMebibytes(std::size_t bytes) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f MiB", bytes / 1048576.0);
  return text;
}

}  // namespace doppio
