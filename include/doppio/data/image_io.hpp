#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <opencv2/core.hpp>

#include "doppio/core/common.hpp"

namespace doppio {

// OpenCV's imread/imdecode flag for the colour choice: 3-channel BGR, 1-channel gray, or the
// file's own (gray stays gray, colour becomes BGR, always 8 bits per channel).
int ImageReadFlag(bool force_color, bool force_gray);

// Decodes encoded image bytes (JPEG, PNG, ...). Returns an empty Mat when they do not decode.
cv::Mat DecodeImage(std::string_view bytes, int flag);

// Reads an image file; resizes it (bilinear) to height x width when both are > 0. Returns
// an empty Mat when the file is missing or does not decode.
cv::Mat ReadImage(const std::string& path, int height, int width, bool is_color);

// Stores an 8-bit image in a Datum: channels x height x width, planar (CHW), BGR order.
void MatToDatum(const cv::Mat& image, Datum* datum);

// The datum's image as an 8-bit Mat (decoding encoded data with `flag`); empty when encoded
// data does not decode. Raw datums must carry uint8 data.
cv::Mat DatumToMat(const Datum& datum, int flag);

// Fills a Datum from an image file, as convert_imageset stores it. With `encoding` empty
// the pixels are stored raw (resized and converted as asked); otherwise the datum holds the
// image encoded in that format ("jpg", "png", ...): the file's own bytes when no resize is
// asked and the file already has that format, else re-encoded. Returns false when the file
// is missing or does not decode.
// `shape`, when given, receives the image's {C, H, W}.
bool ReadImageToDatum(const std::string& path, int label, int height, int width, bool is_color,
                      const std::string& encoding, Datum* datum, std::vector<int>* shape = nullptr);

}  // namespace doppio
