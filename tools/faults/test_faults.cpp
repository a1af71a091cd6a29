#include "test_faults.hpp"

#include <cstdlib>
#include <filesystem>

#include "doppio/util/error.hpp"

namespace doppio {

namespace {

int ParseEnvInt(const char* name) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return -1;
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  DOPPIO_ENSURE(end != text && *end == '\0' && value >= 0 && value < (1 << 30))
      << name << " must be a non-negative integer, not '" << text << "'";
  return static_cast<int>(value);
}

}  // namespace

void FileNameWriteFault::set_substring(const std::string& substring) {
  std::lock_guard<std::mutex> lock(mutex_);
  substring_ = substring;
}

bool FileNameWriteFault::FailWrite(const std::string& path) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return !substring_.empty() &&
         std::filesystem::path(path).filename().string().find(substring_) != std::string::npos;
}

FaultInjection FaultInjectionFromEnvironment() {
  FaultInjection fault;
  fault.rank = ParseEnvInt("DOPPIO_FAIL_RANK");
  fault.iter = ParseEnvInt("DOPPIO_FAIL_ITER");
  if (const char* mode = std::getenv("DOPPIO_FAIL_MODE")) fault.mode = mode;
  if (fault.rank < 0) return fault;
  DOPPIO_ENSURE(fault.iter >= 0) << "DOPPIO_FAIL_RANK is set, so DOPPIO_FAIL_ITER must be too";
  DOPPIO_ENSURE(fault.mode == "error" || fault.mode == "crash" || fault.mode == "exit" ||
                fault.mode == "hang" || fault.mode == "nan")
      << "DOPPIO_FAIL_MODE must be error, crash, exit, hang or nan, not '" << fault.mode << "'";
  return fault;
}

void InstallWriteFaultFromEnvironment() {
  const char* substring = std::getenv("DOPPIO_FAULT_WRITE");
  if (substring == nullptr || *substring == '\0') return;
  // Lives as long as the process: the writes it breaks may come at any time.
  static FileNameWriteFault fault;
  fault.set_substring(substring);
  InstallFaultPoints(&fault);
}

}  // namespace doppio
