#pragma once

#include <mutex>
#include <string>

#include "doppio/parallel/fault_injection.hpp"
#include "doppio/util/fault_points.hpp"

namespace doppio {

// Test-only: never linked into the library or the shipped doppio tool.

// Atomic writes of files whose name contains the substring fail half-way with ENOSPC.
class FileNameWriteFault : public FaultPoints {
 public:
  // Empty: no write fails.
  void set_substring(const std::string& substring);
  bool FailWrite(const std::string& path) const override;

 private:
  mutable std::mutex mutex_;
  std::string substring_;
};

// DOPPIO_FAIL_RANK=r DOPPIO_FAIL_ITER=k [DOPPIO_FAIL_MODE=error|crash|exit|hang]; none when
// DOPPIO_FAIL_RANK is unset. Throws Error naming the variable for a malformed value.
FaultInjection FaultInjectionFromEnvironment();

// DOPPIO_FAULT_WRITE=SUBSTRING: installs a FileNameWriteFault for the substring (see
// InstallFaultPoints); nothing when it is unset or empty.
void InstallWriteFaultFromEnvironment();

}  // namespace doppio
