#include "doppio/data/data_transformer.hpp"

#include <glog/logging.h>

#include <opencv2/core.hpp>

#include <climits>

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
  const PhiloxWords words = SampleWords(seed_, position, 0);
  if (param_.crop_size() > 0) {
    draw.crop_h = words.v[0];
    draw.crop_w = words.v[1];
  }
  if (param_.mirror()) draw.mirror = (words.v[2] >> 31) != 0;
  return draw;
}

template <typename Dtype>
int DataTransformer<Dtype>::DecodeFlag() const {
  return ImageReadFlag(param_.force_color(), param_.force_gray());
}

template <typename Dtype>
void DataTransformer<Dtype>::CheckCrop(int height, int width, const std::string& where,
                                       int channels) const {
  const int crop = static_cast<int>(param_.crop_size());
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
std::vector<int> DataTransformer<Dtype>::InferShape(const Datum& datum,
                                                    const std::string& where) const {
  if (datum.encoded()) {
    const cv::Mat image = DecodeImage(datum.data(), DecodeFlag());
    DOPPIO_ENSURE(!image.empty()) << owner_ << ": " << where
                                  << " is marked encoded but does not decode as an image";
    return InferShape(image, where);
  }
  CheckRawDatum(datum, owner_, where);
  CheckCrop(datum.height(), datum.width(), where, datum.channels());
  CheckMean(datum.channels(), datum.height(), datum.width(), where);
  const int crop = static_cast<int>(param_.crop_size());
  return {datum.channels(), crop > 0 ? crop : datum.height(), crop > 0 ? crop : datum.width()};
}

template <typename Dtype>
std::vector<int> DataTransformer<Dtype>::InferShape(const cv::Mat& image,
                                                    const std::string& where) const {
  CheckCrop(image.rows, image.cols, where, image.channels());
  CheckMean(image.channels(), image.rows, image.cols, where);
  const int crop = static_cast<int>(param_.crop_size());
  return {image.channels(), crop > 0 ? crop : image.rows, crop > 0 ? crop : image.cols};
}

template <typename Dtype>
template <typename Src>
void DataTransformer<Dtype>::TransformPixels(const Src* src, std::size_t channel_stride,
                                             std::size_t row_stride, std::size_t col_stride,
                                             int channels, int height, int width, const Draw& draw,
                                             Dtype* out, const std::string& where,
                                             const std::vector<int>* expected) const {
  const int crop = static_cast<int>(param_.crop_size());
  CheckCrop(height, width, where, channels);
  int out_h = height, out_w = width, h_off = 0, w_off = 0;
  if (crop > 0) out_h = out_w = crop;
  if (expected != nullptr) {
    const std::vector<int>& e = *expected;
    DOPPIO_ENSURE(e.size() == 3 && e[0] == channels && e[1] == out_h && e[2] == out_w)
        << owner_ << ": " << where << " gives a " << DatumShapeString(channels, out_h, out_w)
        << " input but earlier records give " << DatumShapeString(e[0], e[1], e[2])
        << "; records of differing sizes need transform_param.crop_size, or resizing when "
        << "the data set is built (convert_imageset --resize_height/--resize_width)";
  }
  if (crop > 0) {
    if (phase_ == TRAIN) {
      h_off = static_cast<int>(draw.crop_h % static_cast<std::uint32_t>(height - crop + 1));
      w_off = static_cast<int>(draw.crop_w % static_cast<std::uint32_t>(width - crop + 1));
    } else {
      h_off = (height - crop) / 2;
      w_off = (width - crop) / 2;
    }
  }
  const bool mirror = phase_ == TRAIN && draw.mirror;
  const Dtype scale = static_cast<Dtype>(param_.scale());
  const bool use_mean_file = !mean_.empty();
  CheckMean(channels, height, width, where);
  const int num_values = param_.mean_value_size();

  for (int c = 0; c < channels; ++c) {
    const Dtype channel_mean =
        num_values == 0 ? Dtype(0) : static_cast<Dtype>(param_.mean_value(num_values == 1 ? 0 : c));
    for (int h = 0; h < out_h; ++h) {
      const Src* in = src + c * channel_stride + (h + h_off) * row_stride + w_off * col_stride;
      Dtype* row = out + (static_cast<std::size_t>(c) * out_h + h) * out_w;
      // Mirroring writes the row backwards.
      Dtype* dst = mirror ? row + out_w - 1 : row;
      const std::ptrdiff_t step = mirror ? -1 : 1;
      if (use_mean_file) {
        const float* mean_row =
            mean_.data() + (static_cast<std::size_t>(c) * height + h + h_off) * width + w_off;
        for (int w = 0; w < out_w; ++w) {
          dst[w * step] = (static_cast<Dtype>(in[w * col_stride]) - mean_row[w]) * scale;
        }
      } else {
        for (int w = 0; w < out_w; ++w) {
          dst[w * step] = (static_cast<Dtype>(in[w * col_stride]) - channel_mean) * scale;
        }
      }
    }
  }
}

template <typename Dtype>
void DataTransformer<Dtype>::Transform(const Datum& datum, const Draw& draw, Dtype* out,
                                       const std::string& where,
                                       const std::vector<int>* expected) const {
  if (datum.encoded()) {
    const cv::Mat image = DecodeImage(datum.data(), DecodeFlag());
    DOPPIO_ENSURE(!image.empty()) << owner_ << ": " << where
                                  << " is marked encoded but does not decode as an image";
    Transform(image, draw, out, where, expected);
    return;
  }
  CheckRawDatum(datum, owner_, where);
  if (param_.force_color() || param_.force_gray()) {
    LOG_FIRST_N(WARNING, 1) << owner_ << ": transform_param.force_color / force_gray apply to "
                            << "encoded records only; raw records keep their channels";
  }
  const int channels = datum.channels(), height = datum.height(), width = datum.width();
  const std::size_t plane = static_cast<std::size_t>(height) * width;
  if (!datum.data().empty()) {
    TransformPixels(reinterpret_cast<const unsigned char*>(datum.data().data()), plane,
                    static_cast<std::size_t>(width), 1, channels, height, width, draw, out, where,
                    expected);
  } else {
    TransformPixels(datum.float_data().data(), plane, static_cast<std::size_t>(width), 1, channels,
                    height, width, draw, out, where, expected);
  }
}

template <typename Dtype>
void DataTransformer<Dtype>::Transform(const cv::Mat& image, const Draw& draw, Dtype* out,
                                       const std::string& where,
                                       const std::vector<int>* expected) const {
  DOPPIO_ENSURE(image.depth() == CV_8U) << owner_ << ": " << where << " is not an 8-bit image";
  const int channels = image.channels();
  TransformPixels(image.ptr<unsigned char>(0), 1, image.step[0], static_cast<std::size_t>(channels),
                  channels, image.rows, image.cols, draw, out, where, expected);
}

DOPPIO_INSTANTIATE_CLASS(DataTransformer);

}  // namespace doppio
