#include <glog/logging.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "test_util.hpp"

namespace doppio {

TempDir::TempDir() {
  std::string pattern = (std::filesystem::temp_directory_path() / "doppio_test_XXXXXX").string();
  char* made = mkdtemp(pattern.data());
  EXPECT_NE(made, nullptr);
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

}  // namespace doppio

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  google::InitGoogleLogging(argv[0]);
  FLAGS_logtostderr = true;
  FLAGS_minloglevel = google::WARNING;
  doppio::SetBlasThreads(1);
  return RUN_ALL_TESTS();
}
