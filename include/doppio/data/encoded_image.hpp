#pragma once

#include <string>
#include <string_view>

#include <opencv2/core.hpp>

namespace doppio {

// Images with more pixels than this are refused before any pixel is allocated: a corrupt
// or hostile header (20000 x 20000) must not cost gigabytes of memory. 2^26 pixels is
// 8192 x 8192, 192 MiB as BGR bytes.
inline constexpr long long kMaxImagePixels = 1LL << 26;

// An encoded image (the data of an encoded Datum) whose header has been read: its size, and
// its pixels on demand. JPEGs of 1 or 3 components stored upright decode through
// libjpeg-turbo, only the rows and columns asked for and, where asked, at 1/8 to 8/8 of
// their size in the DCT domain; their pixels at full size are OpenCV's imdecode's, bit for
// bit. Everything else (PNG, BMP, CMYK JPEGs, JPEGs whose Exif orientation OpenCV would
// apply, or whose Exif block does not read) is decoded whole by OpenCV when opened.
class EncodedImage {
 public:
  enum class Decoder { kAuto, kOpenCV };

  // Reads the header of `bytes`, which must outlive this object, for decoding with OpenCV's
  // imdecode flag `flag`. False, with the reason in *reason, when the data is not an image
  // that decodes, or has more than kMaxImagePixels pixels.
  bool Open(std::string_view bytes, int flag, Decoder decoder, std::string* reason);

  int height() const { return height_; }
  int width() const { return width_; }
  int channels() const { return channels_; }
  // Whether Decode can scale in the DCT domain (scale_eighths below 8).
  bool scalable() const { return decoded_.empty(); }

  // The pixels of `rect` of the image scaled by scale_eighths / 8 (8 unless scalable()),
  // whose size ScaledSize gives, as an 8-bit HWC BGR or gray Mat. False, with the reason in
  // *reason, when they do not decode.
  bool Decode(int scale_eighths, const cv::Rect& rect, cv::Mat* pixels, std::string* reason) const;

  // The size of a side of `size` pixels scaled by eighths / 8, rounded up as libjpeg does.
  static int ScaledSize(int size, int eighths) { return (size * eighths + 7) / 8; }

 private:
  std::string_view bytes_;
  int channels_ = 0, height_ = 0, width_ = 0;
  // The whole image, for the formats OpenCV decodes.
  cv::Mat decoded_;
};

}  // namespace doppio
