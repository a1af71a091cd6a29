#include "doppio/data/encoded_image.hpp"

#include <opencv2/imgcodecs.hpp>

#include <cstring>

#include "doppio/data/image_codecs.hpp"
#include "doppio/data/image_io.hpp"

namespace doppio {

namespace {

const unsigned char* Bytes(std::string_view bytes) {
  return reinterpret_cast<const unsigned char*>(bytes.data());
}

bool TooLarge(long long height, long long width, std::string* reason) {
  if (height * width <= kMaxImagePixels) return false;
  *reason = "its header says " + std::to_string(width) + "x" + std::to_string(height) +
            " pixels, more than the " + std::to_string(kMaxImagePixels) + " Doppio decodes";
  return true;
}

// OpenCV allocates the size a PNG's header gives before it reads a pixel, so that size is
// checked first: the IHDR chunk, which must come first, holds it at bytes 16 to 23.
bool PngTooLarge(std::string_view bytes, std::string* reason) {
  static constexpr char kSignature[] = "\x89PNG\r\n\x1a\n";
  if (bytes.size() < 24 || std::memcmp(bytes.data(), kSignature, 8) != 0) return false;
  const unsigned char* b = Bytes(bytes);
  auto big_endian = [&](int at) {
    return (static_cast<long long>(b[at]) << 24) | (b[at + 1] << 16) | (b[at + 2] << 8) | b[at + 3];
  };
  return TooLarge(big_endian(20), big_endian(16), reason);
}

}  // namespace

bool EncodedImage::Open(std::string_view bytes, int flag, Decoder decoder, std::string* reason) {
  bytes_ = bytes;
  decoded_ = cv::Mat();
  if (bytes.empty()) {
    *reason = "no data";
    return false;
  }
  const ImageCodecs& codecs = OpenImageCodecs();
  JpegHeader header;
  std::string jpeg_error;
  const bool jpeg = codecs.jpeg_header(Bytes(bytes), bytes.size(), &header, &jpeg_error);
  if (jpeg && TooLarge(header.height, header.width, reason)) return false;
  if (jpeg && decoder == Decoder::kAuto && !header.oriented &&
      (header.components == 1 || header.components == 3)) {
    height_ = header.height;
    width_ = header.width;
    channels_ = flag == cv::IMREAD_COLOR       ? 3
                : flag == cv::IMREAD_GRAYSCALE ? 1
                                               : (header.components == 1 ? 1 : 3);
    return true;
  }
  if (PngTooLarge(bytes, reason)) return false;
  decoded_ = DecodeImage(bytes, flag);
  if (decoded_.empty()) {
    // libjpeg's reason is the one worth giving for data that starts as a JPEG.
    *reason = !jpeg_error.empty() && bytes.size() >= 2 && Bytes(bytes)[0] == 0xFF &&
                      Bytes(bytes)[1] == 0xD8
                  ? jpeg_error
                  : "not an image OpenCV decodes (JPEG, PNG, BMP, ...)";
    return false;
  }
  height_ = decoded_.rows;
  width_ = decoded_.cols;
  channels_ = decoded_.channels();
  return true;
}

bool EncodedImage::Decode(int scale_eighths, const cv::Rect& rect, cv::Mat* pixels,
                          std::string* reason) const {
  if (!decoded_.empty()) {
    if (scale_eighths != 8 || (rect & cv::Rect(0, 0, width_, height_)) != rect) {
      *reason = "no such part of the decoded image";
      return false;
    }
    *pixels = decoded_(rect);
    return true;
  }
  const JpegRequest request{scale_eighths, channels_, rect};
  return OpenImageCodecs().jpeg_decode(Bytes(bytes_), bytes_.size(), request, pixels, reason);
}

}  // namespace doppio
