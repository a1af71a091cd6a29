// transform_param.resized_crop_size (torchvision's RandomResizedCrop) against windows and
// bilinear values worked out by hand, and the decoders behind the transforms: the
// libjpeg-turbo path gives OpenCV's pixels where it does not scale.
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>
#include <vector>

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>

#include "data_test_helpers.hpp"
#include "doppio/data/data_transformer.hpp"
#include "doppio/data/image_io.hpp"
#include "jpeg_test_images.hpp"
#include "test_util.hpp"

namespace doppio {
namespace {

using testing_data::MakeDatum;

DataTransformer<float> Make(const std::string& text, Phase phase, std::uint64_t seed = 3) {
  DataTransformer<float> transformer(ParseText<TransformationParameter>(text), phase, "layer 'd'");
  transformer.set_seed(seed);
  return transformer;
}

std::vector<float> Apply(const DataTransformer<float>& transformer, const Datum& datum,
                         std::uint64_t position = 0) {
  const std::vector<int> shape = transformer.InferShape(datum, "record 'r'");
  std::vector<float> out(static_cast<std::size_t>(shape[0]) * shape[1] * shape[2]);
  transformer.Transform(datum, transformer.DrawFor(position), out.data(), "record 'r'", &shape);
  return out;
}

void ExpectValues(const std::vector<float>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5) << i;
}

Datum EncodedDatum(const std::string& bytes) {
  Datum datum;
  datum.set_encoded(true);
  datum.set_data(bytes);
  return datum;
}

// The record's pixels decoded by OpenCV, as a raw Datum.
Datum DecodedDatum(const std::string& bytes, int flag) {
  Datum datum;
  MatToDatum(DecodeImage(bytes, flag), &datum);
  return datum;
}

TEST(ResizedCrop, WindowsWorkedOutByHand) {
  // 4 x 6, a target of the whole area at ratio 1: a 5 x 5 window (round(sqrt(24))) never
  // fits, so every try fails and the centre crop of ratio 1 is taken: 4 x 4 at x = 1.
  const auto square = Make(
      "resized_crop_size: 2 resized_crop_scale_min: 1 resized_crop_ratio_min: 1 "
      "resized_crop_ratio_max: 1",
      TRAIN);
  for (std::uint64_t p = 0; p < 20; ++p) {
    EXPECT_EQ(square.WindowFor(4, 6, square.DrawFor(p)), cv::Rect(1, 0, 4, 4)) << p;
  }
  // TEST takes that centre crop of the closest ratio in range: 6 / 4 = 1.5 is above 4/3, so
  // the full height and a width of round(4 * 4/3) = 5, at x = (6 - 5) / 2 = 0.
  const auto test = Make("resized_crop_size: 2", TEST);
  EXPECT_EQ(test.WindowFor(4, 6, test.DrawFor(0)), cv::Rect(0, 0, 5, 4));
  // 10 x 2 (ratio 0.2, below 3/4): the full width and a height of round(2 / 0.75) = 3, at
  // y = (10 - 3) / 2 = 3.
  EXPECT_EQ(test.WindowFor(10, 2, test.DrawFor(0)), cv::Rect(0, 3, 2, 3));
  // In range: the whole record.
  EXPECT_EQ(test.WindowFor(5, 6, test.DrawFor(0)), cv::Rect(0, 0, 6, 5));
}

TEST(ResizedCrop, AFixedScaleAndRatioVisitEveryOffset) {
  // A quarter of 8 x 8 at ratio 1 is 4 x 4, at any of 5 x 5 offsets.
  const auto transformer = Make(
      "resized_crop_size: 2 resized_crop_scale_min: 0.25 resized_crop_scale_max: 0.25 "
      "resized_crop_ratio_min: 1 resized_crop_ratio_max: 1",
      TRAIN);
  std::set<std::pair<int, int>> offsets;
  for (std::uint64_t p = 0; p < 400; ++p) {
    const cv::Rect window = transformer.WindowFor(8, 8, transformer.DrawFor(p));
    ASSERT_EQ(window.size(), cv::Size(4, 4)) << p;
    offsets.insert({window.x, window.y});
  }
  EXPECT_EQ(offsets.size(), 25u);
}

TEST(ResizedCrop, DrawsKeepToTheirRanges) {
  const auto transformer = Make("resized_crop_size: 8", TRAIN);
  double smallest = 1, largest = 0, narrowest = 10, widest = 0;
  for (std::uint64_t p = 0; p < 2000; ++p) {
    const cv::Rect window = transformer.WindowFor(300, 400, transformer.DrawFor(p));
    ASSERT_EQ(window & cv::Rect(0, 0, 400, 300), window) << p;
    const double share = window.area() / 120000.0;
    const double ratio = static_cast<double>(window.width) / window.height;
    smallest = std::min(smallest, share);
    largest = std::max(largest, share);
    narrowest = std::min(narrowest, ratio);
    widest = std::max(widest, ratio);
  }
  // Rounding to whole pixels moves a share or ratio by about 1 / 100 of a side.
  EXPECT_GT(smallest, 0.079);
  EXPECT_LT(smallest, 0.1);
  EXPECT_GT(largest, 0.95);
  EXPECT_GT(narrowest, 0.74);
  EXPECT_LT(narrowest, 0.78);
  EXPECT_LT(widest, 1.34);
  EXPECT_GT(widest, 1.30);
  // The same position draws the same window; another seed another one.
  const auto same = Make("resized_crop_size: 8", TRAIN);
  const auto other = Make("resized_crop_size: 8", TRAIN, 4);
  int differing = 0;
  for (std::uint64_t p = 0; p < 50; ++p) {
    EXPECT_EQ(transformer.WindowFor(300, 400, transformer.DrawFor(p)),
              same.WindowFor(300, 400, same.DrawFor(p)));
    differing += transformer.WindowFor(300, 400, transformer.DrawFor(p)) !=
                 other.WindowFor(300, 400, other.DrawFor(p));
  }
  EXPECT_GT(differing, 45);
}

TEST(ResizedCrop, BilinearUpscaleWorkedOutByHand) {
  // 2 x 2 [[0, 10], [20, 30]] to 4 x 4: output o samples 0.5 o - 0.25, clamped to [0, 1],
  // so each axis takes 0, 0.25, 0.75, 1 of the way: columns 0, 2.5, 7.5, 10 plus rows 0, 5,
  // 15, 20. Then (v - 5) * 0.5.
  const Datum datum = MakeDatum(1, 2, 2, 0, [](int, int h, int w) { return 20 * h + 10 * w; });
  const auto transformer = Make("resized_crop_size: 4 mean_value: 5 scale: 0.5", TEST);
  std::vector<double> want;
  for (double row : {0.0, 5.0, 15.0, 20.0}) {
    for (double col : {0.0, 2.5, 7.5, 10.0}) want.push_back((row + col - 5) * 0.5);
  }
  ExpectValues(Apply(transformer, datum), want);
}

TEST(ResizedCrop, BilinearDownscaleWorkedOutByHand) {
  // 4 x 4 of 10 h + w to 2 x 2: samples at 0.5 and 2.5, the means of 2 x 2 blocks.
  const Datum datum = MakeDatum(1, 4, 4, 0, [](int, int h, int w) { return 10 * h + w; });
  ExpectValues(Apply(Make("resized_crop_size: 2", TEST), datum), {5.5, 7.5, 25.5, 27.5});
  // Two channels, each with its own mean.
  const Datum two = MakeDatum(2, 4, 4, 0, [](int c, int h, int w) { return 100 * c + 10 * h + w; });
  ExpectValues(Apply(Make("resized_crop_size: 2 mean_value: 1 mean_value: 2", TEST), two),
               {4.5, 6.5, 24.5, 26.5, 103.5, 105.5, 123.5, 125.5});
}

TEST(ResizedCrop, MirrorReversesTheResizedRows) {
  const Datum datum = MakeDatum(1, 4, 4, 0, [](int, int h, int w) { return 10 * h + w; });
  // Scale 1 and ratio 1 of a square: the whole record in every draw.
  const std::string whole =
      "resized_crop_size: 2 resized_crop_scale_min: 1 resized_crop_ratio_min: 1 "
      "resized_crop_ratio_max: 1";
  const auto mirroring = Make(whole + " mirror: true", TRAIN);
  int mirrored = 0;
  for (std::uint64_t p = 0; p < 40; ++p) {
    const bool flip = mirroring.DrawFor(p).mirror;
    mirrored += flip;
    ExpectValues(Apply(mirroring, datum, p), flip ? std::vector<double>{7.5, 5.5, 27.5, 25.5}
                                                  : std::vector<double>{5.5, 7.5, 25.5, 27.5});
  }
  EXPECT_GT(mirrored, 5);
  EXPECT_LT(mirrored, 35);
}

// Through the JPEG decoder, without DCT scaling, the values are those of OpenCV's pixels put
// through the same transform; with it, the window is the same and the values close.
TEST(ResizedCrop, JpegRecordsGiveTheValuesOfTheirDecodedPixels) {
  const std::string bytes = testing_jpeg::EncodeJpeg(testing_jpeg::PhotoLike(375, 500, 3, 21));
  const Datum encoded = EncodedDatum(bytes);
  const Datum decoded = DecodedDatum(bytes, cv::IMREAD_COLOR);
  const std::string text = "resized_crop_size: 64 mirror: true mean_value: 104 mean_value: 117";
  const auto exact = Make(text + " mean_value: 123 jpeg_dct_scaling: false", TRAIN);
  const auto scaled = Make(text + " mean_value: 123", TRAIN);
  double worst_mean = 0;
  int scaled_decodes = 0;
  for (std::uint64_t p = 0; p < 30; ++p) {
    const std::vector<float> reference = Apply(exact, decoded, p);
    EXPECT_EQ(Apply(exact, encoded, p), reference) << p;
    const std::vector<float> fast = Apply(scaled, encoded, p);
    ASSERT_EQ(fast.size(), reference.size());
    double sum = 0;
    for (std::size_t i = 0; i < fast.size(); ++i) sum += std::abs(fast[i] - reference[i]);
    worst_mean = std::max(worst_mean, sum / fast.size());
    // A window of at least twice the output's side decodes at 1/2 or less.
    const cv::Rect window = scaled.WindowFor(375, 500, scaled.DrawFor(p));
    const bool scalable = window.width >= 128 && window.height >= 128;
    scaled_decodes += scalable;
    if (!scalable) EXPECT_EQ(fast, reference) << p;
    if (scalable) EXPECT_NE(fast, reference) << p;
  }
  EXPECT_GT(scaled_decodes, 5);
  // DCT scaling low-passes where the plain bilinear resize aliases; a few levels of 255 on
  // average between the two.
  EXPECT_LT(worst_mean, 6.0);
}

// crop_size and the whole record, from JPEGs of every colour layout: the libjpeg-turbo path
// (cropped decode) gives the OpenCV path's values bit for bit.
TEST(ResizedCrop, CroppedJpegDecodesGiveOpenCVsValues) {
  for (int channels : {1, 3}) {
    for (const char* colour : {"", "force_color: true", "force_gray: true"}) {
      const std::string bytes =
          testing_jpeg::EncodeJpeg(testing_jpeg::PhotoLike(256, 256, channels, 30 + channels));
      const Datum encoded = EncodedDatum(bytes);
      for (const char* transform : {"crop_size: 227 mirror: true mean_value: 104", "scale: 2"}) {
        const std::string text = std::string(transform) + " " + colour;
        SCOPED_TRACE(text + " of a " + std::to_string(channels) + "-channel JPEG");
        const auto fast = Make(text, TRAIN);
        const auto opencv = Make(text + " decoder: OPENCV", TRAIN);
        for (std::uint64_t p = 0; p < 10; ++p)
          EXPECT_EQ(Apply(fast, encoded, p), Apply(opencv, encoded, p));
      }
    }
  }
}

TEST(ResizedCrop, BadParameters) {
  EXPECT_ERROR_WITH(Make("resized_crop_size: 4 crop_size: 2", TRAIN), "layer 'd'",
                    "resized_crop_size", "crop_size");
  EXPECT_ERROR_WITH(Make("resized_crop_size: 4 mean_file: 'm.binaryproto'", TRAIN), "mean_file");
  EXPECT_ERROR_WITH(
      Make("resized_crop_size: 4 resized_crop_scale_min: 0.5 resized_crop_scale_max: 0.2", TRAIN),
      "resized_crop_scale_min/max", "0.5", "0.2");
  EXPECT_ERROR_WITH(Make("resized_crop_size: 4 resized_crop_ratio_min: 0", TRAIN),
                    "resized_crop_ratio_min/max");
}

TEST(ResizedCrop, UndecodableAndTooSmallRecordsNameTheRecordAndReason) {
  const auto transformer = Make("crop_size: 32", TRAIN);
  const std::string bytes = testing_jpeg::EncodeJpeg(testing_jpeg::PhotoLike(64, 64, 3, 40));
  EXPECT_THROW_WITH(Apply(transformer, EncodedDatum(bytes.substr(0, bytes.size() / 3))),
                    UndecodableRecord, "layer 'd'", "record 'r'", "Premature end of JPEG file");
  EXPECT_THROW_WITH(Apply(transformer, EncodedDatum("garbage")), UndecodableRecord, "record 'r'",
                    "does not decode");
  const std::string small = testing_jpeg::EncodeJpeg(testing_jpeg::PhotoLike(20, 40, 3, 41));
  EXPECT_ERROR_WITH(Apply(transformer, EncodedDatum(small)), "record 'r'", "crop_size 32",
                    "3x20x40");
}

}  // namespace
}  // namespace doppio
