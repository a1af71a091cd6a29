// libjpeg-turbo's own API behind the codecs table's jpeg_header and jpeg_decode
// (doppio/data/image_codecs.hpp says what they do).
#pragma once

#include <cstddef>
#include <string>

#include "doppio/data/image_codecs.hpp"

namespace doppio::codecs {

bool ReadJpegHeader(const unsigned char* data, std::size_t size, JpegHeader* header,
                    std::string* error);

bool DecodeJpeg(const unsigned char* data, std::size_t size, const JpegRequest& request,
                cv::Mat* image, std::string* error);

}  // namespace doppio::codecs
