#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "doppio/core/common.hpp"

namespace cv {
class Mat;
}

namespace doppio {

// Turns one record (a Datum, or an image read through OpenCV) into network input:
//   out[c][h][w] = (in[c][h + h_off][w' + w_off] - mean) * scale
// with
// - crop_size: a crop_size x crop_size window, at a random offset in TRAIN and centred in
//   TEST ((H - crop) / 2, as Caffe);
// - mirror: in TRAIN, a random half of the records are flipped left-right; TEST never
//   mirrors, so scores are reproducible;
// - mean: mean_file (a BlobProto of the full, uncropped record shape, subtracted at the crop
//   window) or mean_value (one for all channels, or one per channel), not both;
// - force_color / force_gray: decode encoded records as 3-channel BGR or 1-channel gray.
//
// The random choices for a record are a function of the seed and the record's position in
// the global stream of training samples (DrawFor, counter-based: philox.hpp), not of a
// sequential generator: a record is cropped and mirrored alike whichever rank reads it, on
// any number of ranks, threads or prefetch depth, and a run resumed at a position draws what
// the uninterrupted run drew there. Everything is const and may run on several threads.
template <typename Dtype>
class DataTransformer {
 public:
  // `owner` names the layer in error messages. Reads the mean file, if any (Error naming it
  // when it cannot be read).
  DataTransformer(const TransformationParameter& param, Phase phase, const std::string& owner);

  // The same on every rank (drawn from the layer's base seed).
  void set_seed(std::uint64_t seed) { seed_ = seed; }

  // The random choices for one record.
  struct Draw {
    std::uint32_t crop_h = 0, crop_w = 0;
    bool mirror = false;
  };
  Draw DrawFor(std::uint64_t position) const;

  // Output shape {C, H, W} for a record (encoded records are decoded to learn their size).
  // `where` names the record in errors (e.g. "record '00000012' of LMDB 'x'").
  std::vector<int> InferShape(const Datum& datum, const std::string& where) const;
  std::vector<int> InferShape(const cv::Mat& image, const std::string& where) const;

  // Writes C*H*W values to out. Throws Error naming the layer and the record for a record
  // whose size disagrees with its shape, a crop larger than the record, a mean of another
  // shape, encoded data that does not decode, or (when `expected` is given) an output shape
  // other than *expected.
  void Transform(const Datum& datum, const Draw& draw, Dtype* out, const std::string& where,
                 const std::vector<int>* expected = nullptr) const;
  // An 8-bit image (HWC, BGR or gray).
  void Transform(const cv::Mat& image, const Draw& draw, Dtype* out, const std::string& where,
                 const std::vector<int>* expected = nullptr) const;

  const TransformationParameter& param() const { return param_; }
  bool has_mean_file() const { return !mean_.empty(); }
  // The mean file's pixels (C x H x W, row-major) and shape {C, H, W}; empty without one.
  const std::vector<float>& mean_image() const { return mean_; }
  std::vector<int> mean_shape() const { return {mean_channels_, mean_height_, mean_width_}; }

 private:
  template <typename Src>
  void TransformPixels(const Src* src, std::size_t channel_stride, std::size_t row_stride,
                       std::size_t col_stride, int channels, int height, int width,
                       const Draw& draw, Dtype* out, const std::string& where,
                       const std::vector<int>* expected) const;
  void CheckCrop(int height, int width, const std::string& where, int channels) const;
  void CheckMean(int channels, int height, int width, const std::string& where) const;
  int DecodeFlag() const;

  TransformationParameter param_;
  Phase phase_;
  std::string owner_;
  std::uint64_t seed_ = 0;
  // The mean file's pixels and shape.
  std::vector<float> mean_;
  int mean_channels_ = 0, mean_height_ = 0, mean_width_ = 0;
};

// A Datum's own shape {C, H, W} without decoding (0s for encoded records).
std::string DatumShapeString(int channels, int height, int width);

}  // namespace doppio
