#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

// The error every layer of the system throws; it needs nothing but the standard library, so
// the lowest parts (util/) use it without the generated protobuf header that core/common.hpp
// brings.
namespace doppio {

// The exit status of `doppio` and of an mpirun job running it (MPI_Abort passes it on), so
// that a script or scheduler can tell a fault to fix from a run to repeat. docs/exit_codes.md
// lists them for users.
enum class ExitCode : int {
  kSuccess = 0,
  // A bad file, field, shape or flag: fix the input and run again.
  kUserError = 1,
  // A bad command line (unknown command, stray argument).
  kUsage = 2,
  // A NaN or infinity in the loss or a gradient: training diverged.
  kDiverged = 3,
  // Another rank died, stopped answering, or the link to it failed.
  kLostRank = 4,
  // SIGINT or SIGTERM stopped training (after a snapshot, unless told otherwise).
  kInterrupted = 5,
  // A bug in Doppio (an exception that is not an Error).
  kInternal = 70,
};

// Every error a user can cause (a bad file, field, shape or flag) is thrown as Error, so
// the tools can print it and exit non-zero instead of aborting. Internal invariants use
// glog's CHECK. The exit code says which kind of failure it is (kUserError unless given).
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what, ExitCode code = ExitCode::kUserError)
      : std::runtime_error(what), code_(code) {}
  ExitCode code() const { return code_; }

 private:
  ExitCode code_;
};

namespace detail {
// Collects a message through operator<<.
class ErrorMessage {
 public:
  template <typename T>
  ErrorMessage& operator<<(const T& value) {
    stream_ << value;
    return *this;
  }
  std::string str() const { return stream_.str(); }

 private:
  std::ostringstream stream_;
};
// operator& binds looser than <<, so the whole message is collected before the conversion.
struct MakeError {
  Error operator&(const ErrorMessage& message) const { return Error(message.str()); }
};
}  // namespace detail

}  // namespace doppio

// DOPPIO_ENSURE(cond) << "message"; throws doppio::Error with the message when cond is false.
#define DOPPIO_ENSURE(condition) \
  if (condition) {               \
  } else                         \
    throw ::doppio::detail::MakeError() & ::doppio::detail::ErrorMessage()

// DOPPIO_FAIL() << "message"; always throws doppio::Error.
#define DOPPIO_FAIL() throw ::doppio::detail::MakeError() & ::doppio::detail::ErrorMessage()
