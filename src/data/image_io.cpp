#include "doppio/data/image_io.hpp"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <iterator>
#include <vector>

#include <glog/logging.h>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "doppio/data/image_codecs.hpp"

namespace doppio {

int ImageReadFlag(bool force_color, bool force_gray) {
  if (force_color) return cv::IMREAD_COLOR;
  if (force_gray) return cv::IMREAD_GRAYSCALE;
  return cv::IMREAD_ANYCOLOR;
}

cv::Mat DecodeImage(std::string_view bytes, int flag) {
  if (bytes.empty()) return cv::Mat();
  const cv::Mat buffer(1, static_cast<int>(bytes.size()), CV_8UC1, const_cast<char*>(bytes.data()));
  try {
    return OpenImageCodecs().decode(buffer, flag);
  } catch (const cv::Exception&) {
    return cv::Mat();
  }
}

cv::Mat ReadImage(const std::string& path, int height, int width, bool is_color) {
  cv::Mat image;
  try {
    image = OpenImageCodecs().read(path, is_color ? cv::IMREAD_COLOR : cv::IMREAD_GRAYSCALE);
    if (!image.empty() && height > 0 && width > 0 &&
        (image.rows != height || image.cols != width)) {
      cv::Mat resized;
      cv::resize(image, resized, cv::Size(width, height), 0, 0, cv::INTER_LINEAR);
      image = resized;
    }
  } catch (const cv::Exception&) {
    return cv::Mat();
  }
  return image;
}

void MatToDatum(const cv::Mat& image, Datum* datum) {
  CHECK(image.depth() == CV_8U) << "MatToDatum takes 8-bit images";
  const int channels = image.channels(), height = image.rows, width = image.cols;
  datum->set_channels(channels);
  datum->set_height(height);
  datum->set_width(width);
  datum->clear_float_data();
  datum->set_encoded(false);
  std::string* data = datum->mutable_data();
  data->resize(static_cast<std::size_t>(channels) * height * width);
  for (int h = 0; h < height; ++h) {
    const unsigned char* row = image.ptr<unsigned char>(h);
    for (int w = 0; w < width; ++w) {
      for (int c = 0; c < channels; ++c) {
        (*data)[(static_cast<std::size_t>(c) * height + h) * width + w] =
            static_cast<char>(row[w * channels + c]);
      }
    }
  }
}

cv::Mat DatumToMat(const Datum& datum, int flag) {
  if (datum.encoded()) return DecodeImage(datum.data(), flag);
  const int channels = datum.channels(), height = datum.height(), width = datum.width();
  cv::Mat image(height, width, CV_8UC(channels));
  for (int h = 0; h < height; ++h) {
    unsigned char* row = image.ptr<unsigned char>(h);
    for (int w = 0; w < width; ++w) {
      for (int c = 0; c < channels; ++c) {
        row[w * channels + c] = static_cast<unsigned char>(
            datum.data()[(static_cast<std::size_t>(c) * height + h) * width + w]);
      }
    }
  }
  return image;
}

namespace {
std::string Lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}
}  // namespace

bool ReadImageToDatum(const std::string& path, int label, int height, int width, bool is_color,
                      const std::string& encoding, Datum* datum, std::vector<int>* shape) {
  const cv::Mat image = ReadImage(path, height, width, is_color);
  if (image.empty()) return false;
  if (shape != nullptr) *shape = {image.channels(), image.rows, image.cols};
  datum->Clear();
  datum->set_label(label);
  if (encoding.empty()) {
    MatToDatum(image, datum);
    return true;
  }
  const std::string format = Lower(encoding);
  const auto dot = path.rfind('.');
  std::string extension = dot == std::string::npos ? "" : Lower(path.substr(dot + 1));
  if (extension == "jpeg") extension = "jpg";
  const bool resized = height > 0 && width > 0;
  // The file's own bytes are kept when nothing about the pixels changes; a gray conversion
  // of a colour file also changes them, which only decoding tells.
  if (!resized && extension == (format == "jpeg" ? "jpg" : format) &&
      (is_color || image.channels() == 1)) {
    const cv::Mat original = OpenImageCodecs().read(path, cv::IMREAD_UNCHANGED);
    if (!original.empty() && (is_color ? original.channels() >= 3 : original.channels() == 1)) {
      std::ifstream in(path, std::ios::binary);
      std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      if (in.good() || in.eof()) {
        datum->set_data(bytes);
        datum->set_encoded(true);
        return true;
      }
    }
  }
  std::vector<unsigned char> buffer;
  try {
    DOPPIO_ENSURE(OpenImageCodecs().encode("." + format, image, &buffer))
        << path << ": cannot encode the image as " << format;
  } catch (const cv::Exception& error) {
    DOPPIO_FAIL() << path << ": cannot encode the image as " << format << " (" << error.what()
                  << ")";
  }
  datum->set_data(std::string(buffer.begin(), buffer.end()));
  datum->set_encoded(true);
  return true;
}

}  // namespace doppio
