// libdoppio_image_codecs: OpenCV's image codecs and libjpeg-turbo's decoder behind the table
// of doppio/data/image_codecs.hpp, which says why they are a module of their own.
#include <opencv2/imgcodecs.hpp>

#include "doppio/data/image_codecs.hpp"
#include "jpeg_decoder.hpp"

namespace {

cv::Mat Decode(const cv::Mat& bytes, int flag) { return cv::imdecode(bytes, flag); }

cv::Mat Read(const std::string& path, int flag) { return cv::imread(path, flag); }

bool Encode(const std::string& extension, const cv::Mat& image, std::vector<unsigned char>* bytes) {
  return cv::imencode(extension, image, *bytes);
}

bool HasWriter(const std::string& extension) { return cv::haveImageWriter(extension); }

const doppio::ImageCodecs kCodecs = {
    Decode, Read, Encode, HasWriter, doppio::codecs::ReadJpegHeader, doppio::codecs::DecodeJpeg};

}  // namespace

extern "C" const doppio::ImageCodecs* DoppioImageCodecs() { return &kCodecs; }
