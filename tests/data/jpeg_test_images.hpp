// JPEGs of every kind the decoder meets, written with libjpeg itself so that the test picks
// the chroma subsampling, progressive mode, restart markers and colour space (OpenCV's
// imencode offers neither 4:4:4 nor CMYK). A suite that includes this links libjpeg.
#pragma once

#include <gtest/gtest.h>

// jpeglib.h needs FILE and size_t declared before it.
#include <cstdio>
#include <cstdlib>

#include <jpeglib.h>

#include <string>

#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

namespace doppio {
namespace testing_jpeg {

// A photograph-like image: gradients, filled circles and noise, so that every DCT
// coefficient and chroma sample carries something.
inline cv::Mat PhotoLike(int height, int width, int channels, unsigned seed) {
  cv::Mat image(height, width, CV_8UC3);
  cv::RNG rng(seed);
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      image.at<cv::Vec3b>(y, x) = cv::Vec3b((x * 3 + seed) % 256, (y * 2) % 256, (x + y) / 2 % 256);
    }
  }
  for (int s = 0; s < 12; ++s) {
    cv::circle(image, cv::Point(rng.uniform(0, width), rng.uniform(0, height)),
               rng.uniform(1, std::max(2, width / 4)),
               cv::Scalar(rng.uniform(0, 256), rng.uniform(0, 256), rng.uniform(0, 256)), -1);
  }
  cv::Mat noise(height, width, CV_8UC3);
  rng.fill(noise, cv::RNG::NORMAL, 0, 12);
  image += noise;
  if (channels == 1) {
    cv::Mat gray;
    cv::cvtColor(image, gray, cv::COLOR_BGR2GRAY);
    return gray;
  }
  if (channels == 4) {
    cv::Mat cmyk;
    cv::cvtColor(image, cmyk, cv::COLOR_BGR2BGRA);
    return cmyk;
  }
  return image;
}

struct JpegOptions {
  int quality = 90;
  // The luminance's sampling factors: 2 x 2 is 4:2:0, 2 x 1 4:2:2, 1 x 1 4:4:4.
  int h_samp = 2, v_samp = 2;
  bool progressive = false;
  // MCU rows between restart markers; 0: none.
  int restart_rows = 0;
};

// Encodes an 8-bit image: 1 channel as gray, 3 as BGR (stored YCbCr), 4 as CMYK.
inline std::string EncodeJpeg(const cv::Mat& image, const JpegOptions& options = {}) {
  jpeg_compress_struct info{};
  jpeg_error_mgr errors{};
  info.err = jpeg_std_error(&errors);
  jpeg_create_compress(&info);
  unsigned char* buffer = nullptr;
  unsigned long size = 0;
  jpeg_mem_dest(&info, &buffer, &size);
  info.image_width = static_cast<JDIMENSION>(image.cols);
  info.image_height = static_cast<JDIMENSION>(image.rows);
  info.input_components = image.channels();
  info.in_color_space = image.channels() == 1   ? JCS_GRAYSCALE
                        : image.channels() == 4 ? JCS_CMYK
                                                : JCS_EXT_BGR;
  jpeg_set_defaults(&info);
  jpeg_set_quality(&info, options.quality, TRUE);
  if (image.channels() == 3) {
    info.comp_info[0].h_samp_factor = options.h_samp;
    info.comp_info[0].v_samp_factor = options.v_samp;
  }
  if (options.progressive) jpeg_simple_progression(&info);
  info.restart_in_rows = options.restart_rows;
  jpeg_start_compress(&info, TRUE);
  while (info.next_scanline < info.image_height) {
    JSAMPROW row = const_cast<JSAMPROW>(image.ptr<JSAMPLE>(static_cast<int>(info.next_scanline)));
    jpeg_write_scanlines(&info, &row, 1);
  }
  jpeg_finish_compress(&info);
  jpeg_destroy_compress(&info);
  std::string bytes(reinterpret_cast<const char*>(buffer), size);
  std::free(buffer);
  return bytes;
}

}  // namespace testing_jpeg
}  // namespace doppio
