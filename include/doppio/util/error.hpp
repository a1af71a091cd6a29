#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

// The error every layer of the system throws; it needs nothing but the standard library, so
// the lowest parts (util/) use it without the generated protobuf header that core/common.hpp
// brings.
namespace doppio {

// Every error a user can cause (a bad file, field, shape or flag) is thrown as Error, so
// the tools can print it and exit non-zero instead of aborting. Internal invariants use
// glog's CHECK.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
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
