#pragma once

#include <glog/logging.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>

#include "doppio/util/error.hpp"

// What every fuzz target shares. A target hands its bytes to the production readers as the
// file a user would give them, so the same open/parse/check code runs; the files live in a
// scratch folder of the process, in memory (/dev/shm) where there is one.
namespace doppio::fuzz {

inline void QuietLogging() {
  // Net and solver set-up log at INFO for every input; that output would cost more than the
  // work. CHECK failures still print.
  FLAGS_logtostderr = true;
  FLAGS_minloglevel = google::GLOG_ERROR;
}

inline const std::filesystem::path& ScratchDir() {
  static const std::filesystem::path dir = [] {
    QuietLogging();
    const char* base = std::filesystem::is_directory("/dev/shm") ? "/dev/shm" : "/tmp";
    std::string pattern = std::string(base) + "/doppio-fuzz-XXXXXX";
    if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp " + pattern);
    std::atexit([] { std::filesystem::remove_all(ScratchDir()); });
    return std::filesystem::path(pattern);
  }();
  return dir;
}

inline std::string WriteScratch(const std::string& name, const std::uint8_t* data,
                                std::size_t size) {
  const std::string path = (ScratchDir() / name).string();
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  if (!out.flush()) throw std::runtime_error("cannot write " + path);
  return path;
}

// A doppio::Error is the product's answer to a bad file; anything else escaping (another
// exception, a CHECK abort, a sanitizer report) is a finding.
// DOPPIO_FUZZ_VERBOSE=1 prints those answers, to see why an input is refused.
template <typename F>
void ExpectingErrors(F&& run) {
  static const bool verbose = std::getenv("DOPPIO_FUZZ_VERBOSE") != nullptr;
  try {
    run();
  } catch (const Error& error) {
    if (verbose) std::cerr << "doppio::Error: " << error.what() << "\n";
  }
}

}  // namespace doppio::fuzz
