#pragma once

#include <string>

#include "test_faults.hpp"

namespace doppio {

// While it lives, atomic writes of files whose name contains `substring` fail half-way
// with ENOSPC. Fault points are installed once per process (InstallFaultPoints): one
// FileNameWriteFault serves every ScopedWriteFault of the test executable.
class ScopedWriteFault {
 public:
  explicit ScopedWriteFault(const std::string& substring) { Fault().set_substring(substring); }
  ~ScopedWriteFault() { Fault().set_substring(""); }
  ScopedWriteFault(const ScopedWriteFault&) = delete;
  ScopedWriteFault& operator=(const ScopedWriteFault&) = delete;

 private:
  static FileNameWriteFault& Fault() {
    static FileNameWriteFault* fault = [] {
      auto* installed = new FileNameWriteFault;
      InstallFaultPoints(installed);
      return installed;
    }();
    return *fault;
  }
};

}  // namespace doppio
