#include "test_util.hpp"

namespace doppio {

const std::string& SourceDir() {
  static const std::string path = DOPPIO_SOURCE_DIR;
  return path;
}

const std::string& BinaryDir() {
  static const std::string path = DOPPIO_BINARY_DIR;
  return path;
}

}  // namespace doppio
