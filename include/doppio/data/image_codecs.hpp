#pragma once

#include <opencv2/core.hpp>

#include <cstddef>
#include <string>
#include <vector>

namespace doppio {

// What a JPEG's header says, read without decoding any pixels.
struct JpegHeader {
  int width = 0, height = 0;
  // 1 (gray), 3 (YCbCr or RGB) or 4 (CMYK or YCCK).
  int components = 0;
  // The file carries an Exif orientation other than 1 (upright), which OpenCV applies when it
  // decodes, or an Exif block that could not be read to tell.
  bool oriented = false;
};

// One libjpeg-turbo decode: the pixels of `rect` of the image scaled by scale_eighths / 8
// (the DCT scaling of libjpeg, 1 to 8), whose size is ceil(width * scale_eighths / 8) x
// ceil(height * scale_eighths / 8).
struct JpegRequest {
  int scale_eighths = 8;
  // 1: gray (the luminance, as OpenCV's IMREAD_GRAYSCALE); 3: BGR.
  int channels = 3;
  // In pixels of the scaled image; must lie inside it.
  cv::Rect rect;
};

// OpenCV's image codecs (imgcodecs) and libjpeg-turbo live in a module of their own,
// libdoppio_image_codecs, that the data pipeline opens the first time it reads, decodes or
// encodes an image. Linked into libdoppio they cost every process about 0.2 s of CPU at
// start-up (Debian's imgcodecs pulls in GDAL, GDCM, Poppler and a hundred more libraries),
// which `doppio --help`, a run on raw-pixel records and every test process would pay for
// nothing.
struct ImageCodecs {
  cv::Mat (*decode)(const cv::Mat& bytes, int flag);
  cv::Mat (*read)(const std::string& path, int flag);
  bool (*encode)(const std::string& extension, const cv::Mat& image,
                 std::vector<unsigned char>* bytes);
  bool (*has_writer)(const std::string& extension);
  // Reads a JPEG's header. False, with libjpeg's reason in *error, when the bytes are not a
  // JPEG or its header is corrupt.
  bool (*jpeg_header)(const unsigned char* data, std::size_t size, JpegHeader* header,
                      std::string* error);
  // Decodes request.rect of a 1- or 3-component JPEG into *image (rect.height x rect.width,
  // 8 bits a channel), decoding only the rows and the whole iMCU columns the rect needs plus
  // a margin that keeps fancy upsampling's pixels at the rect's edges those of a full decode.
  // False, with libjpeg's reason in *error, when it does not decode; a premature end of the
  // data inside the rows decoded is an error, not grey pixels.
  bool (*jpeg_decode)(const unsigned char* data, std::size_t size, const JpegRequest& request,
                      cv::Mat* image, std::string* error);
};

// The codecs, opened on the first call (thread-safe). Throws doppio::Error naming the module
// when it cannot be opened.
const ImageCodecs& OpenImageCodecs();

}  // namespace doppio

// What the module exports: its table of codecs.
extern "C" const doppio::ImageCodecs* DoppioImageCodecs();
