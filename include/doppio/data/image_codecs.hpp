#pragma once

#include <opencv2/core.hpp>

#include <string>
#include <vector>

namespace doppio {

// OpenCV's image codecs (imgcodecs) live in a module of their own, libdoppio_image_codecs,
// that the data pipeline opens the first time it reads, decodes or encodes an image. Linked
// into libdoppio they cost every process about 0.2 s of CPU at start-up (Debian's imgcodecs
// pulls in GDAL, GDCM, Poppler and a hundred more libraries), which `doppio --help`, a run
// on raw-pixel records and every test process would pay for nothing.
struct ImageCodecs {
  cv::Mat (*decode)(const cv::Mat& bytes, int flag);
  cv::Mat (*read)(const std::string& path, int flag);
  bool (*encode)(const std::string& extension, const cv::Mat& image,
                 std::vector<unsigned char>* bytes);
  bool (*has_writer)(const std::string& extension);
};

// The codecs, opened on the first call (thread-safe). Throws doppio::Error naming the module
// when it cannot be opened.
const ImageCodecs& OpenImageCodecs();

}  // namespace doppio

// What the module exports: its table of codecs.
extern "C" const doppio::ImageCodecs* DoppioImageCodecs();
