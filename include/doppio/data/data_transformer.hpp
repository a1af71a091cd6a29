#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <opencv2/core/types.hpp>

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
// - force_color / force_gray: decode encoded records as 3-channel BGR or 1-channel gray;
// - resized_crop_size (Doppio): torchvision's RandomResizedCrop instead of crop_size
//   (docs/data_transforms.md).
// Encoded records decode only the window the output needs (EncodedImage), in one pass with
// the rest.
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
    // The record's stream position: a random-resized crop draws its tries from it once the
    // record's size is known.
    std::uint64_t position = 0;
  };
  Draw DrawFor(std::uint64_t position) const;

  // Output shape {C, H, W} for a record (encoded records are decoded to learn their size).
  // `where` names the record in errors (e.g. "record '00000012' of LMDB 'x'").
  std::vector<int> InferShape(const Datum& datum, const std::string& where) const;
  std::vector<int> InferShape(const cv::Mat& image, const std::string& where) const;

  // The window of a height x width record that the output is taken from: crop_size's,
  // the random-resized crop's, or the whole record.
  cv::Rect WindowFor(int height, int width, const Draw& draw) const;
  // WindowFor a record of channels x height x width after the checks Transform makes (the
  // crop fits, the mean file's shape, the output's shape is *expected when given): for a
  // transform done elsewhere (nvJPEG and the device, data_param.decode: GPU).
  cv::Rect CheckedWindow(int channels, int height, int width, const Draw& draw,
                         const std::string& where, const std::vector<int>* expected) const;
  // Whether the output is mirrored (TRAIN only).
  bool Mirrors(const Draw& draw) const { return phase_ == TRAIN && draw.mirror; }

  // Writes C*H*W values to out. Throws Error naming the layer and the record for a record
  // whose size disagrees with its shape, a crop larger than the record, a mean of another
  // shape, or (when `expected` is given) an output shape other than *expected; and
  // UndecodableRecord, with the decoder's reason, for encoded data that does not decode.
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
  // Pixel (c, h, w) of a source is src[c * channel + h * row + w * col].
  template <typename Src>
  struct Pixels {
    const Src* src;
    std::size_t channel, row, col;
  };
  template <typename Src>
  void TransformPixels(const Pixels<Src>& pixels, int channels, int height, int width,
                       const Draw& draw, Dtype* out, const std::string& where,
                       const std::vector<int>* expected) const;
  void TransformEncoded(const Datum& datum, const Draw& draw, Dtype* out, const std::string& where,
                        const std::vector<int>* expected) const;
  // Writes the output of `window` of a height x width record whose window starts at `pixels`.
  template <typename Src>
  void CopyWindow(const Pixels<Src>& pixels, int channels, const cv::Rect& window, int height,
                  int width, bool mirror, Dtype* out) const;
  // Writes the output of the region of `pixels` (rows x cols) with top-left corner (x, y)
  // and size w x h, in pixels and fractions of them, resized (bilinear) to the output size.
  template <typename Src>
  void ResizeWindow(const Pixels<Src>& pixels, int channels, int rows, int cols, double x, double y,
                    double w, double h, bool mirror, Dtype* out) const;
  std::vector<int> OutputShape(int channels, int height, int width) const;
  void CheckOutput(const std::vector<int>& shape, const std::string& where,
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

// Encoded data that does not decode (DataParameter.skip_corrupt skips such records).
class UndecodableRecord : public Error {
 public:
  using Error::Error;
};

// A Datum's own shape {C, H, W} without decoding (0s for encoded records).
std::string DatumShapeString(int channels, int height, int width);

}  // namespace doppio
