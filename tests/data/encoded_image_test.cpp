// The libjpeg-turbo decoder (EncodedImage) against OpenCV's imdecode, the decoder it
// replaces: the same pixels bit for bit at full size, for every kind of JPEG, for the whole
// image and for any rectangle of it; OpenCV's own reduced decodes at 1/2, 1/4 and 1/8.
#include "doppio/data/encoded_image.hpp"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>

#include "jpeg_test_images.hpp"

namespace doppio {
namespace {

using testing_jpeg::EncodeJpeg;
using testing_jpeg::JpegOptions;
using testing_jpeg::PhotoLike;

cv::Mat OpenCVDecode(const std::string& bytes, int flag) {
  return cv::imdecode(
      cv::Mat(1, static_cast<int>(bytes.size()), CV_8UC1, const_cast<char*>(bytes.data())), flag);
}

bool Same(const cv::Mat& a, const cv::Mat& b) {
  return a.size() == b.size() && a.type() == b.type() && cv::norm(a, b, cv::NORM_INF) == 0;
}

struct Kind {
  const char* name;
  int channels;
  JpegOptions options;
};

const std::vector<Kind>& Kinds() {
  static const std::vector<Kind> kinds = {
      {"baseline 4:2:0", 3, {90, 2, 2, false, 0}},
      {"baseline 4:2:2", 3, {90, 2, 1, false, 0}},
      {"baseline 4:4:4", 3, {90, 1, 1, false, 0}},
      {"progressive 4:2:0", 3, {90, 2, 2, true, 0}},
      {"progressive 4:4:4", 3, {75, 1, 1, true, 0}},
      {"restart markers 4:2:0", 3, {90, 2, 2, false, 1}},
      {"grayscale", 1, {90, 2, 2, false, 0}},
      {"progressive grayscale", 1, {90, 2, 2, true, 0}},
  };
  return kinds;
}

const std::vector<cv::Size>& Sizes() {
  static const std::vector<cv::Size> sizes = {{256, 256}, {333, 251}, {500, 375}, {17, 9}, {1, 1}};
  return sizes;
}

TEST(EncodedImage, FullSizePixelsAreOpenCVsForEveryKindAndFlag) {
  unsigned seed = 1;
  for (const Kind& kind : Kinds()) {
    for (const cv::Size& size : Sizes()) {
      const std::string bytes =
          EncodeJpeg(PhotoLike(size.height, size.width, kind.channels, seed++), kind.options);
      for (int flag : {cv::IMREAD_COLOR, cv::IMREAD_GRAYSCALE, cv::IMREAD_ANYCOLOR}) {
        SCOPED_TRACE(std::string(kind.name) + " " + std::to_string(size.width) + "x" +
                     std::to_string(size.height) + " flag " + std::to_string(flag));
        EncodedImage image;
        std::string reason;
        ASSERT_TRUE(image.Open(bytes, flag, EncodedImage::Decoder::kAuto, &reason)) << reason;
        EXPECT_TRUE(image.scalable());
        const cv::Mat expected = OpenCVDecode(bytes, flag);
        ASSERT_EQ(image.channels(), expected.channels());
        ASSERT_EQ(image.height(), expected.rows);
        ASSERT_EQ(image.width(), expected.cols);
        cv::Mat pixels;
        ASSERT_TRUE(image.Decode(8, cv::Rect(0, 0, size.width, size.height), &pixels, &reason))
            << reason;
        EXPECT_TRUE(Same(pixels, expected));
      }
    }
  }
}

// A cropped decode skips rows and iMCU columns: the rect's pixels must still be those of the
// full decode, fancy upsampling's at the rect's edges included.
TEST(EncodedImage, AnyRectangleIsTheFullDecodesRectangle) {
  std::mt19937 random(5);
  unsigned seed = 100;
  for (const Kind& kind : Kinds()) {
    for (const cv::Size& size : {cv::Size(256, 256), cv::Size(500, 375), cv::Size(97, 131)}) {
      const std::string bytes =
          EncodeJpeg(PhotoLike(size.height, size.width, kind.channels, seed++), kind.options);
      const cv::Mat full = OpenCVDecode(bytes, cv::IMREAD_COLOR);
      EncodedImage image;
      std::string reason;
      ASSERT_TRUE(image.Open(bytes, cv::IMREAD_COLOR, EncodedImage::Decoder::kAuto, &reason));
      for (int trial = 0; trial < 40; ++trial) {
        const int w = std::uniform_int_distribution<int>(1, size.width)(random);
        const int h = std::uniform_int_distribution<int>(1, size.height)(random);
        const int x = std::uniform_int_distribution<int>(0, size.width - w)(random);
        const int y = std::uniform_int_distribution<int>(0, size.height - h)(random);
        const cv::Rect rect(x, y, w, h);
        SCOPED_TRACE(std::string(kind.name) + " rect " + std::to_string(x) + "," +
                     std::to_string(y) + " " + std::to_string(w) + "x" + std::to_string(h) +
                     " of " + std::to_string(size.width) + "x" + std::to_string(size.height));
        cv::Mat pixels;
        ASSERT_TRUE(image.Decode(8, rect, &pixels, &reason)) << reason;
        ASSERT_TRUE(Same(pixels, full(rect)));
      }
    }
  }
}

// OpenCV's IMREAD_REDUCED_* decodes ask libjpeg for the same DCT scaling.
TEST(EncodedImage, ScaledDecodesAreOpenCVsReducedOnes) {
  const struct {
    int eighths, flag;
  } scales[] = {{4, cv::IMREAD_REDUCED_COLOR_2},
                {2, cv::IMREAD_REDUCED_COLOR_4},
                {1, cv::IMREAD_REDUCED_COLOR_8}};
  unsigned seed = 200;
  for (const Kind& kind : Kinds()) {
    const std::string bytes = EncodeJpeg(PhotoLike(375, 500, kind.channels, seed++), kind.options);
    EncodedImage image;
    std::string reason;
    ASSERT_TRUE(image.Open(bytes, cv::IMREAD_COLOR, EncodedImage::Decoder::kAuto, &reason));
    for (const auto& scale : scales) {
      SCOPED_TRACE(std::string(kind.name) + " at " + std::to_string(scale.eighths) + "/8");
      const cv::Mat expected = OpenCVDecode(bytes, scale.flag);
      ASSERT_EQ(expected.cols, EncodedImage::ScaledSize(500, scale.eighths));
      ASSERT_EQ(expected.rows, EncodedImage::ScaledSize(375, scale.eighths));
      cv::Mat pixels;
      ASSERT_TRUE(image.Decode(scale.eighths, cv::Rect(0, 0, expected.cols, expected.rows), &pixels,
                               &reason));
      EXPECT_TRUE(Same(pixels, expected));
      const cv::Rect rect(expected.cols / 3, expected.rows / 4, expected.cols / 2,
                          expected.rows / 2);
      ASSERT_TRUE(image.Decode(scale.eighths, rect, &pixels, &reason));
      EXPECT_TRUE(Same(pixels, expected(rect)));
    }
  }
}

// What libjpeg-turbo is not asked to decode goes to OpenCV, whole: CMYK JPEGs (OpenCV
// converts them to BGR itself), JPEGs with Exif (OpenCV applies their orientation), PNGs, and
// every record when the OpenCV decoder is asked for.
TEST(EncodedImage, OtherImagesAreOpenCVs) {
  // An Exif block (little-endian TIFF) whose one tag is orientation 6, "rotate 90 clockwise".
  const unsigned char exif[] = {
      0xFF, 0xE1, 0x00, 0x22, 'E',  'x',  'i',  'f', 0, 0, 'I',  'I',  0x2A, 0x00, 0x08, 0, 0, 0,
      0x01, 0x00, 0x12, 0x01, 0x03, 0x00, 0x01, 0,   0, 0, 0x06, 0x00, 0x00, 0x00, 0,    0, 0, 0};
  std::string rotated = EncodeJpeg(PhotoLike(40, 64, 3, 7));
  rotated.insert(2, reinterpret_cast<const char*>(exif), sizeof(exif));
  std::vector<unsigned char> png;
  ASSERT_TRUE(cv::imencode(".png", PhotoLike(30, 20, 3, 8), png));
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"CMYK", EncodeJpeg(PhotoLike(48, 80, 4, 9))},
      {"Exif orientation 6", rotated},
      {"PNG", std::string(png.begin(), png.end())},
  };
  for (const auto& [name, bytes] : cases) {
    SCOPED_TRACE(name);
    EncodedImage image;
    std::string reason;
    ASSERT_TRUE(image.Open(bytes, cv::IMREAD_COLOR, EncodedImage::Decoder::kAuto, &reason))
        << reason;
    EXPECT_FALSE(image.scalable());
    const cv::Mat expected = OpenCVDecode(bytes, cv::IMREAD_COLOR);
    cv::Mat pixels;
    ASSERT_TRUE(image.Decode(8, cv::Rect(0, 0, image.width(), image.height()), &pixels, &reason));
    EXPECT_TRUE(Same(pixels, expected));
  }
  // Orientation 6 turns the 64 x 40 image upright: 40 wide, 64 high.
  EncodedImage upright;
  std::string reason;
  ASSERT_TRUE(upright.Open(rotated, cv::IMREAD_COLOR, EncodedImage::Decoder::kAuto, &reason));
  EXPECT_EQ(upright.width(), 40);
  EXPECT_EQ(upright.height(), 64);
  EncodedImage forced;
  ASSERT_TRUE(forced.Open(EncodeJpeg(PhotoLike(16, 16, 3, 10)), cv::IMREAD_COLOR,
                          EncodedImage::Decoder::kOpenCV, &reason));
  EXPECT_FALSE(forced.scalable());
}

// An Exif block (APP1) with one IFD0 entry, orientation `orientation`, in either byte order.
std::string WithExifOrientation(std::string jpeg, int orientation, bool big_endian) {
  const char o = static_cast<char>(orientation);
  const std::string tiff =
      big_endian ? std::string("MM\0\x2A\0\0\0\x08\0\x01\x01\x12\0\x03\0\0\0\x01\0", 19) + o +
                       std::string("\0\0\0\0\0\0", 6)
                 : std::string("II\x2A\0\x08\0\0\0\x01\0\x12\x01\x03\0\x01\0\0\0", 18) + o +
                       std::string("\0\0\0\0\0\0\0", 7);
  const std::string payload = std::string("Exif\0\0", 6) + tiff;
  const std::size_t length = payload.size() + 2;
  const std::string marker = std::string("\xFF\xE1", 2) + static_cast<char>(length >> 8) +
                             static_cast<char>(length & 0xFF) + payload;
  jpeg.insert(2, marker);
  return jpeg;
}

// Upright Exif JPEGs stay on libjpeg-turbo; turned ones, and Exif blocks that do not read,
// go to OpenCV, which turns them.
TEST(EncodedImage, ExifOrientationDecidesTheDecoder) {
  const std::string plain = EncodeJpeg(PhotoLike(40, 64, 3, 14));
  for (bool big_endian : {false, true}) {
    SCOPED_TRACE(big_endian ? "big-endian" : "little-endian");
    for (int orientation : {1, 3, 6, 8}) {
      const std::string bytes = WithExifOrientation(plain, orientation, big_endian);
      const cv::Mat expected = OpenCVDecode(bytes, cv::IMREAD_COLOR);
      EncodedImage image;
      std::string reason;
      ASSERT_TRUE(image.Open(bytes, cv::IMREAD_COLOR, EncodedImage::Decoder::kAuto, &reason));
      EXPECT_EQ(image.scalable(), orientation == 1) << orientation;
      ASSERT_EQ(cv::Size(image.width(), image.height()), expected.size()) << orientation;
      EXPECT_EQ(expected.cols, orientation >= 5 ? 40 : 64) << orientation;
      cv::Mat pixels;
      ASSERT_TRUE(image.Decode(8, cv::Rect(0, 0, image.width(), image.height()), &pixels, &reason));
      EXPECT_TRUE(Same(pixels, expected)) << orientation;
    }
  }
  // An Exif block cut off inside its directory: OpenCV's to read.
  std::string cut = WithExifOrientation(plain, 1, false);
  cut.erase(20, 10);
  cut[5] = static_cast<char>(cut[5] - 10);
  EncodedImage image;
  std::string reason;
  ASSERT_TRUE(image.Open(cut, cv::IMREAD_COLOR, EncodedImage::Decoder::kAuto, &reason)) << reason;
  EXPECT_FALSE(image.scalable());
}

// Bad data gives a reason, never a crash or grey pixels.
TEST(EncodedImage, BadDataGivesTheDecodersReason) {
  const std::string good = EncodeJpeg(PhotoLike(64, 64, 3, 11));
  std::string reason;
  EncodedImage image;
  EXPECT_FALSE(image.Open("", cv::IMREAD_COLOR, EncodedImage::Decoder::kAuto, &reason));
  EXPECT_EQ(reason, "no data");
  EXPECT_FALSE(
      image.Open("not an image at all", cv::IMREAD_COLOR, EncodedImage::Decoder::kAuto, &reason));
  EXPECT_NE(reason.find("not an image"), std::string::npos) << reason;
  // The header survives but the data ends early: libjpeg's own words.
  const std::string truncated = good.substr(0, good.size() / 2);
  ASSERT_TRUE(image.Open(truncated, cv::IMREAD_COLOR, EncodedImage::Decoder::kAuto, &reason));
  cv::Mat pixels;
  EXPECT_FALSE(image.Decode(8, cv::Rect(0, 0, 64, 64), &pixels, &reason));
  EXPECT_NE(reason.find("Premature end of JPEG file"), std::string::npos) << reason;
  // The header cut short.
  EXPECT_FALSE(
      image.Open(good.substr(0, 40), cv::IMREAD_COLOR, EncodedImage::Decoder::kAuto, &reason));
  EXPECT_FALSE(reason.empty());
  // A rect outside the image.
  ASSERT_TRUE(image.Open(good, cv::IMREAD_COLOR, EncodedImage::Decoder::kAuto, &reason));
  EXPECT_FALSE(image.Decode(8, cv::Rect(10, 10, 60, 10), &pixels, &reason));
  EXPECT_NE(reason.find("outside the 64x64 image"), std::string::npos) << reason;
}

// The SOF0 frame header holds the height and width at bytes 5 to 8 after its marker.
std::string WithJpegSize(std::string bytes, int height, int width) {
  const std::size_t sof = bytes.find("\xFF\xC0", 2);
  EXPECT_NE(sof, std::string::npos);
  bytes[sof + 5] = static_cast<char>(height >> 8);
  bytes[sof + 6] = static_cast<char>(height & 0xFF);
  bytes[sof + 7] = static_cast<char>(width >> 8);
  bytes[sof + 8] = static_cast<char>(width & 0xFF);
  return bytes;
}

TEST(EncodedImage, HugeHeadersAreRefusedBeforeAllocating) {
  std::string reason;
  EncodedImage image;
  const std::string jpeg = WithJpegSize(EncodeJpeg(PhotoLike(16, 16, 3, 12)), 20000, 20000);
  EXPECT_FALSE(image.Open(jpeg, cv::IMREAD_COLOR, EncodedImage::Decoder::kAuto, &reason));
  EXPECT_NE(reason.find("20000x20000"), std::string::npos) << reason;
  std::vector<unsigned char> png;
  ASSERT_TRUE(cv::imencode(".png", PhotoLike(16, 16, 3, 13), png));
  std::string huge_png(png.begin(), png.end());
  for (int at : {16, 20}) {  // width, then height, big-endian
    huge_png[at] = 0;
    huge_png[at + 1] = 0;
    huge_png[at + 2] = static_cast<char>(20000 >> 8);
    huge_png[at + 3] = static_cast<char>(20000 & 0xFF);
  }
  EXPECT_FALSE(image.Open(huge_png, cv::IMREAD_COLOR, EncodedImage::Decoder::kAuto, &reason));
  EXPECT_NE(reason.find("20000x20000"), std::string::npos) << reason;
  // Just under the cap is fine to open (nothing is decoded yet).
  ASSERT_TRUE(image.Open(WithJpegSize(EncodeJpeg(PhotoLike(16, 16, 3, 12)), 8192, 8192),
                         cv::IMREAD_COLOR, EncodedImage::Decoder::kAuto, &reason))
      << reason;
}

}  // namespace
}  // namespace doppio
