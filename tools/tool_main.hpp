// Shared start-up and error handling of the stand-alone converter tools.
#pragma once

#include <gflags/gflags.h>
#include <glog/logging.h>

#include <cstdio>
#include <exception>
#include <functional>
#include <iostream>

#include "doppio/core/common.hpp"

namespace doppio {

// Parses flags, sets logging to stderr, runs `body` and turns an Error into its message and
// its exit code. `args` is the number of positional arguments `body` needs (at least).
inline int RunTool(int argc, char** argv, const char* usage, int args,
                   const std::function<int(int, char**)>& body) {
  gflags::SetUsageMessage(usage);
  // Caffe's log prefix, as the doppio tool writes it (--log_year_in_prefix turns the year on).
  FLAGS_log_year_in_prefix = false;
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  FLAGS_logtostderr = true;
  google::InitGoogleLogging(argv[0]);
  if (argc - 1 < args) {
    gflags::ShowUsageWithFlagsRestrict(argv[0], "tools/");
    return 1;
  }
  try {
    return body(argc, argv);
  } catch (const Error& error) {
    std::fflush(stdout);
    std::cerr << argv[0] << ": error: " << error.what() << std::endl;
    return static_cast<int>(error.code());
  } catch (const std::exception& error) {
    std::fflush(stdout);
    std::cerr << argv[0] << ": internal error: " << error.what() << std::endl;
    return static_cast<int>(ExitCode::kInternal);
  }
}

}  // namespace doppio
