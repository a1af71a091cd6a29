#include "doppio/data/data_transformer.hpp"

#include <glog/logging.h>

#include <opencv2/core.hpp>

#include <algorithm>
#include <climits>
#include <cmath>
#include <type_traits>

#include "doppio/data/encoded_image.hpp"
#include "doppio/data/image_io.hpp"
#include "doppio/util/io.hpp"
#include "doppio/util/philox.hpp"

namespace doppio {

std::string DatumShapeString(int channels, int height, int width) {
  return std::to_string(channels) + "x" + std::to_string(height) + "x" + std::to_string(width);
}

template <typename Dtype>
DataTransformer<Dtype>::DataTransformer(const TransformationParameter& param, Phase phase,
                                        const std::string& owner)
    : param_(param), phase_(phase), owner_(owner) {
  DOPPIO_ENSURE(!(param_.has_mean_file() && param_.mean_value_size() > 0))
      << owner_ << ": give transform_param.mean_file or transform_param.mean_value, not both";
  DOPPIO_ENSURE(!(param_.force_color() && param_.force_gray()))
      << owner_ << ": transform_param.force_color and force_gray cannot both be set";
  DOPPIO_ENSURE(param_.scale() == param_.scale())
      << owner_ << ": transform_param.scale is not a number";
  if (param_.resized_crop_size() > 0) {
    DOPPIO_ENSURE(param_.crop_size() == 0 && !param_.has_mean_file())
        << owner_ << ": transform_param.resized_crop_size cannot be combined with crop_size or "
        << "mean_file (use mean_value)";
    const float scale_min = param_.resized_crop_scale_min();
    const float scale_max = param_.resized_crop_scale_max();
    const float ratio_min = param_.resized_crop_ratio_min();
    const float ratio_max = param_.resized_crop_ratio_max();
    DOPPIO_ENSURE(0 < scale_min && scale_min <= scale_max && scale_max <= 1)
        << owner_ << ": transform_param.resized_crop_scale_min/max must satisfy 0 < min <= max "
        << "<= 1, got " << scale_min << " and " << scale_max;
    DOPPIO_ENSURE(0 < ratio_min && ratio_min <= ratio_max && std::isfinite(ratio_max))
        << owner_ << ": transform_param.resized_crop_ratio_min/max must satisfy 0 < min <= max, "
        << "got " << ratio_min << " and " << ratio_max;
  }
  if (param_.has_mean_file()) {
    BlobProto proto;
    try {
      ReadProtoFromBinaryFile(param_.mean_file(), &proto);
    } catch (const Error& error) {
      DOPPIO_FAIL() << owner_ << ": transform_param.mean_file: " << error.what();
    }
    std::vector<long long> dims;
    if (proto.has_num() || proto.has_channels() || proto.has_height() || proto.has_width()) {
      dims = {proto.num(), proto.channels(), proto.height(), proto.width()};
    } else {
      for (int d = 0; d < proto.shape().dim_size(); ++d) dims.push_back(proto.shape().dim(d));
    }
    // Leading 1s (the num axis) carry no information.
    while (dims.size() > 3 && dims.front() == 1) dims.erase(dims.begin());
    while (dims.size() < 3) dims.insert(dims.begin(), 1);
    // The dims are int64 in the file: each must be a positive int, and their product must not
    // overflow on the way to being compared with the stored count.
    long long count = 1;
    bool in_range = true;
    for (long long d : dims) {
      in_range = in_range && d > 0 && d <= INT_MAX && !__builtin_mul_overflow(count, d, &count);
    }
    const long long stored = proto.data_size() > 0 ? proto.data_size() : proto.double_data_size();
    DOPPIO_ENSURE(dims.size() == 3 && in_range && count == stored)
        << owner_ << ": mean file '" << param_.mean_file()
        << "' is not a 1 x C x H x W mean image (shape with " << dims.size() << " axes, " << stored
        << " values)";
    mean_channels_ = static_cast<int>(dims[0]);
    mean_height_ = static_cast<int>(dims[1]);
    mean_width_ = static_cast<int>(dims[2]);
    mean_.resize(count);
    for (long long i = 0; i < count; ++i) {
      mean_[i] = proto.data_size() > 0 ? proto.data(i) : static_cast<float>(proto.double_data(i));
    }
  }
}

template <typename Dtype>
typename DataTransformer<Dtype>::Draw DataTransformer<Dtype>::DrawFor(
    std::uint64_t position) const {
  Draw draw;
  if (phase_ != TRAIN) return draw;
  draw.position = position;
  const PhiloxWords words = SampleWords(seed_, position, 0);
  if (param_.crop_size() > 0) {
    draw.crop_h = words.v[0];
    draw.crop_w = words.v[1];
  }
  if (param_.mirror()) draw.mirror = (words.v[2] >> 31) != 0;
  return draw;
}

namespace {
// A uniform double in [0, 1) from 32 random bits.
double Unit(std::uint32_t word) { return word * (1.0 / 4294967296.0); }

// An integer in [0, n) from 32 random bits.
int Below(std::uint32_t word, int n) {
  return static_cast<int>((static_cast<std::uint64_t>(word) * static_cast<std::uint64_t>(n)) >> 32);
}

// Python's round(), which torchvision uses: halves to even.
int RoundHalfEven(double v) { return static_cast<int>(std::nearbyint(v)); }
}  // namespace

template <typename Dtype>
cv::Rect DataTransformer<Dtype>::WindowFor(int height, int width, const Draw& draw) const {
  const int crop = static_cast<int>(param_.crop_size());
  if (crop > 0) {
    if (phase_ != TRAIN) return {(width - crop) / 2, (height - crop) / 2, crop, crop};
    return {static_cast<int>(draw.crop_w % static_cast<std::uint32_t>(width - crop + 1)),
            static_cast<int>(draw.crop_h % static_cast<std::uint32_t>(height - crop + 1)), crop,
            crop};
  }
  if (param_.resized_crop_size() == 0) return {0, 0, width, height};
  const double ratio_min = param_.resized_crop_ratio_min();
  const double ratio_max = param_.resized_crop_ratio_max();
  if (phase_ == TRAIN) {
    const double area = static_cast<double>(height) * width;
    const double log_min = std::log(ratio_min), log_max = std::log(ratio_max);
    const double scale_min = param_.resized_crop_scale_min();
    const double scale_max = param_.resized_crop_scale_max();
    // Block 0 holds the crop and mirror words; try t draws from block 1 + t.
    for (int t = 0; t < 10; ++t) {
      const PhiloxWords words = SampleWords(seed_, draw.position, 1 + t);
      const double target = area * (scale_min + (scale_max - scale_min) * Unit(words.v[0]));
      const double aspect = std::exp(log_min + (log_max - log_min) * Unit(words.v[1]));
      const int w = RoundHalfEven(std::sqrt(target * aspect));
      const int h = RoundHalfEven(std::sqrt(target / aspect));
      if (0 < w && w <= width && 0 < h && h <= height) {
        return {Below(words.v[3], width - w + 1), Below(words.v[2], height - h + 1), w, h};
      }
    }
  }
  // The centre crop of the ratio in range closest to the record's.
  const double in_ratio = static_cast<double>(width) / height;
  int w = width, h = height;
  if (in_ratio < ratio_min) {
    h = std::max(1, std::min(height, RoundHalfEven(w / ratio_min)));
  } else if (in_ratio > ratio_max) {
    w = std::max(1, std::min(width, RoundHalfEven(h * ratio_max)));
  }
  return {(width - w) / 2, (height - h) / 2, w, h};
}

template <typename Dtype>
int DataTransformer<Dtype>::DecodeFlag() const {
  return ImageReadFlag(param_.force_color(), param_.force_gray());
}

template <typename Dtype>
void DataTransformer<Dtype>::CheckCrop(int height, int width, const std::string& where,
                                       int channels) const {
  const int crop = static_cast<int>(param_.crop_size());
  DOPPIO_ENSURE(height > 0 && width > 0) << owner_ << ": " << where << " has no pixels";
  DOPPIO_ENSURE(crop <= height && crop <= width)
      << owner_ << ": transform_param.crop_size " << crop << " is larger than " << where << " ("
      << DatumShapeString(channels, height, width) << ")";
}

template <typename Dtype>
void DataTransformer<Dtype>::CheckMean(int channels, int height, int width,
                                       const std::string& where) const {
  if (!mean_.empty()) {
    DOPPIO_ENSURE(mean_channels_ == channels && mean_height_ == height && mean_width_ == width)
        << owner_ << ": mean file '" << param_.mean_file() << "' has shape "
        << DatumShapeString(mean_channels_, mean_height_, mean_width_) << " but " << where << " is "
        << DatumShapeString(channels, height, width)
        << " (the mean must have the record's full, uncropped shape)";
  }
  const int num_values = param_.mean_value_size();
  DOPPIO_ENSURE(num_values == 0 || num_values == 1 || num_values == channels)
      << owner_ << ": transform_param has " << num_values << " mean_value entries but " << where
      << " has " << channels << " channels; give one for all channels or one per channel";
}

namespace {
// Checks that a raw datum's pixels agree with its shape; returns the pixel count.
std::size_t CheckRawDatum(const Datum& datum, const std::string& owner, const std::string& where) {
  DOPPIO_ENSURE(datum.channels() > 0 && datum.height() > 0 && datum.width() > 0)
      << owner << ": " << where << " is not an image record (Datum shape "
      << DatumShapeString(datum.channels(), datum.height(), datum.width())
      << "); is this a data set of Datum records?";
  const long long stored = !datum.data().empty() ? static_cast<long long>(datum.data().size())
                                                 : static_cast<long long>(datum.float_data_size());
  // C * H * W of a corrupt record can pass 2^63.
  long long count = 0;
  const bool overflows = __builtin_mul_overflow(
      static_cast<long long>(datum.channels()) * datum.height(), datum.width(), &count);
  DOPPIO_ENSURE(!overflows && stored == count)
      << owner << ": " << where << " holds " << stored << " values but its shape "
      << DatumShapeString(datum.channels(), datum.height(), datum.width()) << " needs "
      << (overflows ? std::string("more than 2^63") : std::to_string(count));
  return static_cast<std::size_t>(stored);
}
}  // namespace

template <typename Dtype>
std::vector<int> DataTransformer<Dtype>::OutputShape(int channels, int height, int width) const {
  const int crop = static_cast<int>(param_.crop_size());
  const int resized = static_cast<int>(param_.resized_crop_size());
  if (crop > 0) return {channels, crop, crop};
  if (resized > 0) return {channels, resized, resized};
  return {channels, height, width};
}

template <typename Dtype>
void DataTransformer<Dtype>::CheckOutput(const std::vector<int>& shape, const std::string& where,
                                         const std::vector<int>* expected) const {
  if (expected == nullptr) return;
  const std::vector<int>& e = *expected;
  DOPPIO_ENSURE(e.size() == 3 && e == shape)
      << owner_ << ": " << where << " gives a " << DatumShapeString(shape[0], shape[1], shape[2])
      << " input but earlier records give " << DatumShapeString(e[0], e[1], e[2])
      << "; records of differing sizes need transform_param.crop_size or resized_crop_size, or "
      << "resizing when the data set is built (convert_imageset --resize_height/--resize_width)";
}

namespace {
EncodedImage::Decoder DecoderOf(const TransformationParameter& param) {
  return param.decoder() == TransformationParameter::OPENCV ? EncodedImage::Decoder::kOpenCV
                                                            : EncodedImage::Decoder::kAuto;
}
}  // namespace

template <typename Dtype>
std::vector<int> DataTransformer<Dtype>::InferShape(const Datum& datum,
                                                    const std::string& where) const {
  if (datum.encoded()) {
    EncodedImage image;
    std::string reason;
    if (!image.Open(datum.data(), DecodeFlag(), DecoderOf(param_), &reason)) {
      throw UndecodableRecord(owner_ + ": " + where + " does not decode: " + reason);
    }
    CheckCrop(image.height(), image.width(), where, image.channels());
    CheckMean(image.channels(), image.height(), image.width(), where);
    return OutputShape(image.channels(), image.height(), image.width());
  }
  CheckRawDatum(datum, owner_, where);
  CheckCrop(datum.height(), datum.width(), where, datum.channels());
  CheckMean(datum.channels(), datum.height(), datum.width(), where);
  return OutputShape(datum.channels(), datum.height(), datum.width());
}

template <typename Dtype>
std::vector<int> DataTransformer<Dtype>::InferShape(const cv::Mat& image,
                                                    const std::string& where) const {
  CheckCrop(image.rows, image.cols, where, image.channels());
  CheckMean(image.channels(), image.rows, image.cols, where);
  return OutputShape(image.channels(), image.rows, image.cols);
}

namespace {
// At most this many channels are transformed a pixel at a time; more go one channel at a
// time (a Datum may hold any number).
constexpr int kPixelChannels = 4;
}  // namespace

template <typename Dtype>
template <typename Src>
void DataTransformer<Dtype>::CopyWindow(const Pixels<Src>& pixels, int channels,
                                        const cv::Rect& window, int height, int width, bool mirror,
                                        Dtype* out) const {
  const int out_h = window.height, out_w = window.width;
  const Dtype scale = static_cast<Dtype>(param_.scale());
  const int num_values = param_.mean_value_size();
  const std::ptrdiff_t plane = static_cast<std::ptrdiff_t>(out_h) * out_w;
  // Mirroring writes each row backwards.
  const std::ptrdiff_t step = mirror ? -1 : 1;
  const std::size_t col = pixels.col;
  auto channel_mean = [&](int c) {
    return num_values == 0 ? Dtype(0)
                           : static_cast<Dtype>(param_.mean_value(num_values == 1 ? 0 : c));
  };
  if constexpr (std::is_same_v<Src, unsigned char>) {
    if (mean_.empty() && channels <= kPixelChannels) {
      // 8-bit pixels take their values from a table of the 256 per channel, and an
      // interleaved (HWC) source is read once, a pixel's channels together.
      Dtype table[kPixelChannels][256];
      for (int c = 0; c < channels; ++c) {
        for (int v = 0; v < 256; ++v)
          table[c][v] = (static_cast<Dtype>(v) - channel_mean(c)) * scale;
      }
      for (int h = 0; h < out_h; ++h) {
        const Src* in = pixels.src + h * pixels.row;
        Dtype* dst = out + static_cast<std::size_t>(h) * out_w + (mirror ? out_w - 1 : 0);
        for (int w = 0; w < out_w; ++w) {
          const Src* pixel = in + w * col;
          for (int c = 0; c < channels; ++c) {
            dst[c * plane + w * step] = table[c][pixel[c * pixels.channel]];
          }
        }
      }
      return;
    }
  }
  for (int c = 0; c < channels; ++c) {
    const Dtype mean = channel_mean(c);
    for (int h = 0; h < out_h; ++h) {
      const Src* in = pixels.src + c * pixels.channel + h * pixels.row;
      Dtype* dst = out + c * plane + static_cast<std::size_t>(h) * out_w + (mirror ? out_w - 1 : 0);
      if (!mean_.empty()) {
        const float* mean_row =
            mean_.data() + (static_cast<std::size_t>(c) * height + h + window.y) * width + window.x;
        for (int w = 0; w < out_w; ++w) {
          dst[w * step] = (static_cast<Dtype>(in[w * col]) - mean_row[w]) * scale;
        }
      } else {
        for (int w = 0; w < out_w; ++w)
          dst[w * step] = (static_cast<Dtype>(in[w * col]) - mean) * scale;
      }
    }
  }
}

template <typename Dtype>
template <typename Src>
void DataTransformer<Dtype>::ResizeWindow(const Pixels<Src>& pixels, int channels, int rows,
                                          int cols, double x, double y, double w, double h,
                                          bool mirror, Dtype* out) const {
  const int size = static_cast<int>(param_.resized_crop_size());
  // Half-pixel centres, as OpenCV's INTER_LINEAR and torchvision's bilinear resize: output
  // pixel o samples the source at x + (o + 0.5) * w / size - 0.5, clamped to the source.
  struct Tap {
    std::size_t first, second;
    float weight;
  };
  auto taps = [size](double origin, double extent, int limit, std::size_t stride) {
    std::vector<Tap> result(static_cast<std::size_t>(size));
    for (int o = 0; o < size; ++o) {
      const double at = std::clamp(origin + (o + 0.5) * extent / size - 0.5, 0.0, limit - 1.0);
      const int first = static_cast<int>(at);
      const int second = std::min(first + 1, limit - 1);
      result[o] = {first * stride, second * stride, static_cast<float>(at - first)};
    }
    return result;
  };
  const std::vector<Tap> across = taps(x, w, cols, pixels.col);
  const std::vector<Tap> down = taps(y, h, rows, pixels.row);
  const Dtype scale = static_cast<Dtype>(param_.scale());
  const int num_values = param_.mean_value_size();
  const std::ptrdiff_t plane = static_cast<std::ptrdiff_t>(size) * size;
  const std::ptrdiff_t step = mirror ? -1 : 1;
  // The channels of a pixel share its taps: up to kPixelChannels of them are done together.
  for (int first_channel = 0; first_channel < channels; first_channel += kPixelChannels) {
    const int count = std::min(kPixelChannels, channels - first_channel);
    Dtype mean[kPixelChannels];
    for (int c = 0; c < count; ++c) {
      const int channel = first_channel + c;
      mean[c] = num_values == 0
                    ? Dtype(0)
                    : static_cast<Dtype>(param_.mean_value(num_values == 1 ? 0 : channel));
    }
    const Src* source = pixels.src + first_channel * pixels.channel;
    Dtype* target = out + first_channel * plane;
    for (int o = 0; o < size; ++o) {
      const Src* top = source + down[o].first;
      const Src* bottom = source + down[o].second;
      const float down_weight = down[o].weight;
      Dtype* dst = target + static_cast<std::size_t>(o) * size + (mirror ? size - 1 : 0);
      for (int k = 0; k < size; ++k) {
        const Tap& t = across[k];
        for (int c = 0; c < count; ++c) {
          const std::size_t at = c * pixels.channel;
          const float a = static_cast<float>(top[t.first + at]);
          const float b = static_cast<float>(top[t.second + at]);
          const float d = static_cast<float>(bottom[t.first + at]);
          const float e = static_cast<float>(bottom[t.second + at]);
          const float upper = a + t.weight * (b - a);
          const float lower = d + t.weight * (e - d);
          const float value = upper + down_weight * (lower - upper);
          dst[c * plane + k * step] = (static_cast<Dtype>(value) - mean[c]) * scale;
        }
      }
    }
  }
}

template <typename Dtype>
cv::Rect DataTransformer<Dtype>::CheckedWindow(int channels, int height, int width,
                                               const Draw& draw, const std::string& where,
                                               const std::vector<int>* expected) const {
  CheckCrop(height, width, where, channels);
  CheckOutput(OutputShape(channels, height, width), where, expected);
  CheckMean(channels, height, width, where);
  return WindowFor(height, width, draw);
}

template <typename Dtype>
template <typename Src>
void DataTransformer<Dtype>::TransformPixels(const Pixels<Src>& pixels, int channels, int height,
                                             int width, const Draw& draw, Dtype* out,
                                             const std::string& where,
                                             const std::vector<int>* expected) const {
  const cv::Rect window = CheckedWindow(channels, height, width, draw, where, expected);
  const bool mirror = Mirrors(draw);
  const Pixels<Src> at = {pixels.src + window.y * pixels.row + window.x * pixels.col,
                          pixels.channel, pixels.row, pixels.col};
  if (param_.resized_crop_size() > 0) {
    ResizeWindow(at, channels, window.height, window.width, 0, 0, window.width, window.height,
                 mirror, out);
  } else {
    CopyWindow(at, channels, window, height, width, mirror, out);
  }
}

template <typename Dtype>
void DataTransformer<Dtype>::TransformEncoded(const Datum& datum, const Draw& draw, Dtype* out,
                                              const std::string& where,
                                              const std::vector<int>* expected) const {
  EncodedImage image;
  std::string reason;
  auto undecodable = [&] {
    return UndecodableRecord(owner_ + ": " + where + " does not decode: " + reason);
  };
  if (!image.Open(datum.data(), DecodeFlag(), DecoderOf(param_), &reason)) throw undecodable();
  const int channels = image.channels(), height = image.height(), width = image.width();
  const cv::Rect window = CheckedWindow(channels, height, width, draw, where, expected);
  const bool mirror = Mirrors(draw);
  const int size = static_cast<int>(param_.resized_crop_size());
  cv::Mat decoded;
  if (size == 0) {
    if (!image.Decode(8, window, &decoded, &reason)) throw undecodable();
    CopyWindow(Pixels<unsigned char>{decoded.ptr<unsigned char>(0), 1, decoded.step[0],
                                     static_cast<std::size_t>(channels)},
               channels, window, height, width, mirror, out);
    return;
  }
  // The smallest DCT scale at which the window still has the output's size: the resize then
  // only shrinks, and libjpeg skips most of the work of the pixels it would drop. Only 4/8,
  // 2/8 and 1/8: libjpeg-turbo has SIMD inverse DCTs for those alone, and its plain C ones
  // of 7/8, 6/8, ... cost more than the full-size decode they replace.
  int eighths = 8;
  if (image.scalable() && param_.jpeg_dct_scaling()) {
    while (eighths > 1 && window.width * (eighths / 2) >= 8 * size &&
           window.height * (eighths / 2) >= 8 * size) {
      eighths /= 2;
    }
  }
  const double factor = eighths / 8.0;
  const double x = window.x * factor, y = window.y * factor;
  const double w = window.width * factor, h = window.height * factor;
  const int left = static_cast<int>(std::floor(x)), top = static_cast<int>(std::floor(y));
  const int right =
      std::min(EncodedImage::ScaledSize(width, eighths), static_cast<int>(std::ceil(x + w)));
  const int bottom =
      std::min(EncodedImage::ScaledSize(height, eighths), static_cast<int>(std::ceil(y + h)));
  if (!image.Decode(eighths, cv::Rect(left, top, right - left, bottom - top), &decoded, &reason)) {
    throw undecodable();
  }
  ResizeWindow(Pixels<unsigned char>{decoded.ptr<unsigned char>(0), 1, decoded.step[0],
                                     static_cast<std::size_t>(channels)},
               channels, decoded.rows, decoded.cols, x - left, y - top, w, h, mirror, out);
}

template <typename Dtype>
void DataTransformer<Dtype>::Transform(const Datum& datum, const Draw& draw, Dtype* out,
                                       const std::string& where,
                                       const std::vector<int>* expected) const {
  if (datum.encoded()) {
    TransformEncoded(datum, draw, out, where, expected);
    return;
  }
  CheckRawDatum(datum, owner_, where);
  if (param_.force_color() || param_.force_gray()) {
    LOG_FIRST_N(WARNING, 1) << owner_ << ": transform_param.force_color / force_gray apply to "
                            << "encoded records only; raw records keep their channels";
  }
  const int channels = datum.channels(), height = datum.height(), width = datum.width();
  const std::size_t plane = static_cast<std::size_t>(height) * width;
  const std::size_t row = static_cast<std::size_t>(width);
  if (!datum.data().empty()) {
    const auto* bytes = reinterpret_cast<const unsigned char*>(datum.data().data());
    TransformPixels(Pixels<unsigned char>{bytes, plane, row, 1}, channels, height, width, draw, out,
                    where, expected);
  } else {
    TransformPixels(Pixels<float>{datum.float_data().data(), plane, row, 1}, channels, height,
                    width, draw, out, where, expected);
  }
}

template <typename Dtype>
void DataTransformer<Dtype>::Transform(const cv::Mat& image, const Draw& draw, Dtype* out,
                                       const std::string& where,
                                       const std::vector<int>* expected) const {
  DOPPIO_ENSURE(image.depth() == CV_8U) << owner_ << ": " << where << " is not an 8-bit image";
  const int channels = image.channels();
  TransformPixels(Pixels<unsigned char>{image.ptr<unsigned char>(0), 1, image.step[0],
                                        static_cast<std::size_t>(channels)},
                  channels, image.rows, image.cols, draw, out, where, expected);
}

DOPPIO_INSTANTIATE_CLASS(DataTransformer);

}  // namespace doppio
