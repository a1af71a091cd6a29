// libdoppio opens cuBLAS and OpenCV's image codecs when they are first used, not at start-up
// (README, "Build options"): a process that neither reads an image nor runs on a GPU maps
// neither library. This suite must not include opencv2/imgcodecs.hpp (the suites that do are
// linked against the codecs themselves, tests/CMakeLists.txt).
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <string_view>

#include "doppio/data/image_io.hpp"

namespace doppio {
namespace {

bool Mapped(const std::string& library) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    if (line.find(library) != std::string::npos) return true;
  }
  return false;
}

// A 2 x 1 grey PNG whose pixels are 16 and 240.
const unsigned char kPng[] = {
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48,
    0x44, 0x52, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x01, 0x08, 0x00, 0x00, 0x00,
    0x00, 0xd1, 0x49, 0x20, 0x56, 0x00, 0x00, 0x00, 0x0b, 0x49, 0x44, 0x41, 0x54, 0x78,
    0x9c, 0x63, 0x10, 0xf8, 0x00, 0x00, 0x01, 0x13, 0x01, 0x01, 0x75, 0x5b, 0x66, 0xfc,
    0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82};

TEST(LazyLibraries, NeitherCublasNorTheImageCodecsAreLoadedAtStartUp) {
  EXPECT_FALSE(Mapped("libcublas"));
  EXPECT_FALSE(Mapped("libopencv_imgcodecs"));
  EXPECT_FALSE(Mapped("libdoppio_image_codecs"));
}

TEST(LazyLibraries, DecodingAnImageOpensTheCodecsModule) {
  const std::string_view bytes(reinterpret_cast<const char*>(kPng), sizeof(kPng));
  const cv::Mat image = DecodeImage(bytes, ImageReadFlag(false, true));
  ASSERT_EQ(image.rows, 1);
  ASSERT_EQ(image.cols, 2);
  EXPECT_EQ(image.at<unsigned char>(0, 0), 16);
  EXPECT_EQ(image.at<unsigned char>(0, 1), 240);
  EXPECT_TRUE(Mapped("libdoppio_image_codecs"));
  EXPECT_TRUE(Mapped("libopencv_imgcodecs"));
}

}  // namespace
}  // namespace doppio
