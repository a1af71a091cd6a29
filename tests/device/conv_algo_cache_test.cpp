// The file of measured cuDNN convolution algorithms (device/conv_algo_cache.hpp): what one run
// adds, the next reads; a file from another device, or one that does not parse, is ignored
// with a warning naming it and rewritten; a file that cannot be written leaves the run going.
#include "doppio/device/conv_algo_cache.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "log_capture.hpp"
#include "test_util.hpp"

namespace doppio {
namespace {

const char kH100[] = "NVIDIA H100 80GB HBM3 sm_90 driver 13000 cudnn 91000";
const char kH200[] = "NVIDIA H200 sm_90 driver 13000 cudnn 91000";

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

void WriteAll(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

TEST(ConvAlgoCacheTest, ALaterRunFindsWhatAnEarlierOneMeasured) {
  TempDir dir;
  const std::string path = dir.path() + "/sub/folder/algos.txt";  // folders made on write
  {
    ConvAlgoCache cache(path, kH100);
    EXPECT_EQ(cache.size(), 0u);
    EXPECT_FALSE(cache.Find("fwd:f32:n64").has_value());
    cache.Add("fwd:f32:n64", {6, 1});
    cache.Add("bwd_data:f32:n64", {1, 2});
    cache.Add("fwd:f32:n64", {7, 2});  // measured again: the later choice stays
  }
  ConvAlgoCache later(path, kH100);
  EXPECT_EQ(later.size(), 2u);
  ASSERT_TRUE(later.Find("fwd:f32:n64").has_value());
  EXPECT_EQ(*later.Find("fwd:f32:n64"), (ConvAlgoCache::Choice{7, 2}));
  EXPECT_EQ(*later.Find("bwd_data:f32:n64"), (ConvAlgoCache::Choice{1, 2}));
  EXPECT_FALSE(later.Find("bwd_filter:f32:n64").has_value());
}

TEST(ConvAlgoCacheTest, AnotherDevicesFileIsIgnoredAndRewritten) {
  TempDir dir;
  const std::string path = dir.path() + "/algos.txt";
  ConvAlgoCache(path, kH100).Add("fwd:k", {3, 0});
  LogCapture warnings(google::GLOG_WARNING);
  ConvAlgoCache other(path, kH200);
  EXPECT_EQ(other.size(), 0u);
  EXPECT_NE(warnings.text().find(path), std::string::npos) << warnings.text();
  EXPECT_NE(warnings.text().find("measured on NVIDIA H100"), std::string::npos) << warnings.text();
  other.Add("fwd:k", {5, 1});
  const std::string text = ReadAll(path);
  EXPECT_NE(text.find(kH200), std::string::npos) << text;
  EXPECT_EQ(text.find(kH100), std::string::npos) << text;
  EXPECT_EQ(*ConvAlgoCache(path, kH200).Find("fwd:k"), (ConvAlgoCache::Choice{5, 1}));
}

TEST(ConvAlgoCacheTest, CorruptFilesAreIgnoredWithTheReason) {
  TempDir dir;
  const std::string path = dir.path() + "/algos.txt";
  const std::string header =
      "doppio cudnn convolution algorithms 1\ndevice " + std::string(kH100) + "\n";
  const struct {
    std::string text;
    std::string reason;
  } cases[] = {
      {"something else\n", "not a Doppio algorithm cache"},
      {"doppio cudnn convolution algorithms 1\n", "line 2 does not name the device"},
      {header + "fwd:k 3 1\nfwd:j three 1\n", "line 4"},
      {header + "fwd:k 3\n", "line 3"},
      {header + "fwd:k 3 1 extra\n", "line 3"},
      {header + "fwd:k -1 0\n", "line 3"},
  };
  for (const auto& c : cases) {
    WriteAll(path, c.text);
    LogCapture warnings(google::GLOG_WARNING);
    ConvAlgoCache cache(path, kH100);
    EXPECT_EQ(cache.size(), 0u) << c.text;
    EXPECT_NE(warnings.text().find(c.reason), std::string::npos) << c.text << warnings.text();
    EXPECT_NE(warnings.text().find("rewritten"), std::string::npos) << warnings.text();
  }
}

TEST(ConvAlgoCacheTest, AnUnwritableFileIsAWarningNotAnError) {
  TempDir dir;
  WriteAll(dir.path() + "/file", "");
  // A folder where a file is: neither the folder nor the cache file can be made.
  ConvAlgoCache cache(dir.path() + "/file/algos.txt", kH100);
  LogCapture warnings(google::GLOG_WARNING);
  cache.Add("fwd:k", {1, 0});
  EXPECT_NE(warnings.text().find("not saved"), std::string::npos) << warnings.text();
  EXPECT_EQ(*cache.Find("fwd:k"), (ConvAlgoCache::Choice{1, 0}));
}

TEST(ConvAlgoCacheTest, AKeyWithABlankIsRefused) {
  TempDir dir;
  ConvAlgoCache cache(dir.path() + "/algos.txt", kH100);
  EXPECT_THROW(cache.Add("fwd k", {1, 0}), Error);
  EXPECT_THROW(cache.Add("", {1, 0}), Error);
}

}  // namespace
}  // namespace doppio
