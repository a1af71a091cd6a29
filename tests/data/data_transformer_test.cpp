#include "doppio/data/data_transformer.hpp"

#include <gtest/gtest.h>

#include <set>
#include <vector>

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "data_test_helpers.hpp"
#include "doppio/data/image_io.hpp"
#include "doppio/util/io.hpp"
#include "test_util.hpp"

namespace doppio {
namespace {

using testing_data::MakeDatum;

// 1 x 3 x 4, pixel (h, w) = 10 h + w:
//    0  1  2  3
//   10 11 12 13
//   20 21 22 23
Datum Grid() {
  return MakeDatum(1, 3, 4, 7, [](int, int h, int w) { return 10 * h + w; });
}

template <typename Dtype>
class DataTransformerTest : public ::testing::Test {
 protected:
  std::vector<Dtype> Run(const std::string& text, Phase phase, const Datum& datum,
                         std::uint64_t seed = 1) {
    DataTransformer<Dtype> transformer(ParseText<TransformationParameter>(text), phase,
                                       "layer 'd' (Data)");
    transformer.set_seed(seed);
    const std::vector<int> shape = transformer.InferShape(datum, "record 'r'");
    std::vector<Dtype> out(shape[0] * shape[1] * shape[2]);
    transformer.Transform(datum, transformer.DrawFor(0), out.data(), "record 'r'");
    return out;
  }
  void ExpectValues(const std::vector<Dtype>& got, const std::vector<double>& want) {
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5) << i;
  }
};
TYPED_TEST_SUITE(DataTransformerTest, TestDtypes);

TYPED_TEST(DataTransformerTest, IdentityAndScale) {
  this->ExpectValues(this->Run("", TRAIN, Grid()), {0, 1, 2, 3, 10, 11, 12, 13, 20, 21, 22, 23});
  this->ExpectValues(this->Run("scale: 0.5", TEST, Grid()),
                     {0, 0.5, 1, 1.5, 5, 5.5, 6, 6.5, 10, 10.5, 11, 11.5});
}

TYPED_TEST(DataTransformerTest, MeanValueThenScale) {
  // (v - 5) * 2
  this->ExpectValues(this->Run("mean_value: 5 scale: 2", TEST, Grid()),
                     {-10, -8, -6, -4, 10, 12, 14, 16, 30, 32, 34, 36});
}

TYPED_TEST(DataTransformerTest, MeanValuePerChannel) {
  // 2 x 1 x 3: channel c, column w holds 100 c + w.
  const Datum datum = MakeDatum(2, 1, 3, 0, [](int c, int, int w) { return 100 * c + w; });
  this->ExpectValues(this->Run("mean_value: 1 mean_value: 2", TEST, datum),
                     {-1, 0, 1, 98, 99, 100});
  // One value for every channel.
  this->ExpectValues(this->Run("mean_value: 1", TEST, datum), {-1, 0, 1, 99, 100, 101});
}

TYPED_TEST(DataTransformerTest, CentreCropInTest) {
  // crop 2 of 3 x 4: h_off = (3 - 2) / 2 = 0, w_off = (4 - 2) / 2 = 1.
  this->ExpectValues(this->Run("crop_size: 2", TEST, Grid()), {1, 2, 11, 12});
  this->ExpectValues(this->Run("crop_size: 3", TEST, Grid()), {0, 1, 2, 10, 11, 12, 20, 21, 22});
}

TYPED_TEST(DataTransformerTest, RandomCropInTrainVisitsEveryWindow) {
  // The six 2 x 2 windows of a 3 x 4 grid start at (h, w) with h in 0..1, w in 0..2.
  std::set<std::vector<double>> seen;
  for (std::uint64_t seed = 0; seed < 200; ++seed) {
    const auto out = this->Run("crop_size: 2", TRAIN, Grid(), seed);
    ASSERT_EQ(out.size(), 4u);
    const int top_left = static_cast<int>(out[0]);
    const int h = top_left / 10, w = top_left % 10;
    ASSERT_LE(h, 1);
    ASSERT_LE(w, 2);
    this->ExpectValues(out, {double(top_left), double(top_left + 1), double(top_left + 10),
                             double(top_left + 11)});
    seen.insert({out.begin(), out.end()});
  }
  EXPECT_EQ(seen.size(), 6u);
}

TYPED_TEST(DataTransformerTest, MirrorRandomInTrainNeverInTest) {
  const std::vector<double> plain = {0, 1, 2, 3, 10, 11, 12, 13, 20, 21, 22, 23};
  const std::vector<double> flipped = {3, 2, 1, 0, 13, 12, 11, 10, 23, 22, 21, 20};
  int mirrored = 0;
  for (std::uint64_t seed = 0; seed < 100; ++seed) {
    const auto out = this->Run("mirror: true", TRAIN, Grid(), seed);
    const std::vector<double> got(out.begin(), out.end());
    ASSERT_TRUE(got == plain || got == flipped);
    mirrored += got == flipped;
    this->ExpectValues(this->Run("mirror: true", TEST, Grid(), seed), plain);
  }
  EXPECT_GT(mirrored, 20);
  EXPECT_LT(mirrored, 80);
}

TYPED_TEST(DataTransformerTest, MirrorWithCropAndMeanValue) {
  // TEST never mirrors; with TRAIN and a crop, a mirrored window is a reversed window.
  for (std::uint64_t seed = 0; seed < 50; ++seed) {
    const auto out = this->Run("mirror: true crop_size: 2 mean_value: 1", TRAIN, Grid(), seed);
    const double a = out[0] + 1, b = out[1] + 1;
    EXPECT_EQ(std::abs(a - b), 1.0);
    EXPECT_EQ(out[2] + 1, a + 10);
    EXPECT_EQ(out[3] + 1, b + 10);
  }
}

TYPED_TEST(DataTransformerTest, MeanFileSubtractedAtTheCropWindow) {
  TempDir dir;
  BlobProto mean;
  mean.set_num(1);
  mean.set_channels(1);
  mean.set_height(3);
  mean.set_width(4);
  // mean(h, w) = h
  for (int h = 0; h < 3; ++h) {
    for (int w = 0; w < 4; ++w) mean.add_data(static_cast<float>(h));
  }
  const std::string path = dir.path() + "/mean.binaryproto";
  WriteProtoToBinaryFile(mean, path);
  this->ExpectValues(this->Run("mean_file: '" + path + "'", TEST, Grid()),
                     {0, 1, 2, 3, 9, 10, 11, 12, 18, 19, 20, 21});
  // Centre crop at (0, 1); then scale.
  this->ExpectValues(this->Run("mean_file: '" + path + "' crop_size: 2 scale: 0.5", TEST, Grid()),
                     {0.5, 1, 5, 5.5});
  // The shape field works as well as the legacy fields.
  BlobProto shaped;
  for (int d : {1, 1, 3, 4}) shaped.mutable_shape()->add_dim(d);
  *shaped.mutable_data() = mean.data();
  WriteProtoToBinaryFile(shaped, path);
  this->ExpectValues(this->Run("mean_file: '" + path + "' crop_size: 2", TEST, Grid()),
                     {1, 2, 10, 11});
}

TYPED_TEST(DataTransformerTest, FloatData) {
  Datum datum;
  datum.set_channels(1);
  datum.set_height(1);
  datum.set_width(3);
  for (float v : {0.25f, -1.5f, 3.0f}) datum.add_float_data(v);
  this->ExpectValues(this->Run("scale: 2 mean_value: 1", TEST, datum), {-1.5, -5, 4});
}

TYPED_TEST(DataTransformerTest, ImageMatIsReadAsPlanarBgr) {
  // 2 x 2 BGR image: blue = 10 h + w, green = 50 + h, red = 200 + w.
  cv::Mat image(2, 2, CV_8UC3);
  for (int h = 0; h < 2; ++h) {
    for (int w = 0; w < 2; ++w) image.at<cv::Vec3b>(h, w) = cv::Vec3b(10 * h + w, 50 + h, 200 + w);
  }
  DataTransformer<TypeParam> transformer(ParseText<TransformationParameter>("mirror: false"), TEST,
                                         "layer 'i'");
  EXPECT_EQ(transformer.InferShape(image, "x"), (std::vector<int>{3, 2, 2}));
  std::vector<TypeParam> out(12);
  transformer.Transform(image, transformer.DrawFor(0), out.data(), "x");
  this->ExpectValues(out, {0, 1, 10, 11, 50, 50, 51, 51, 200, 201, 200, 201});
  // The same pixels through a Datum give the same values.
  Datum datum;
  MatToDatum(image, &datum);
  this->ExpectValues(this->Run("", TEST, datum),
                     {0, 1, 10, 11, 50, 50, 51, 51, 200, 201, 200, 201});
}

TYPED_TEST(DataTransformerTest, EncodedDatumDecodesWithForceColorAndGray) {
  cv::Mat image(3, 4, CV_8UC3);
  for (int h = 0; h < 3; ++h) {
    for (int w = 0; w < 4; ++w) image.at<cv::Vec3b>(h, w) = cv::Vec3b(h * 40, w * 30, 100);
  }
  std::vector<unsigned char> png;
  ASSERT_TRUE(cv::imencode(".png", image, png));
  Datum encoded;
  encoded.set_encoded(true);
  encoded.set_data(std::string(png.begin(), png.end()));
  Datum raw;
  MatToDatum(image, &raw);
  const auto from_png = this->Run("crop_size: 2", TEST, encoded);
  const auto from_raw = this->Run("crop_size: 2", TEST, raw);
  EXPECT_EQ(from_png, from_raw);
  EXPECT_EQ(from_png.size(), 12u);
  // Gray: one channel, OpenCV's luminance of each pixel.
  const auto gray = this->Run("force_gray: true", TEST, encoded);
  ASSERT_EQ(gray.size(), 12u);
  cv::Mat expected_gray;
  cv::cvtColor(image, expected_gray, cv::COLOR_BGR2GRAY);
  for (int i = 0; i < 12; ++i) EXPECT_NEAR(gray[i], expected_gray.data[i], 1.0) << i;

  // force_color makes a gray PNG 3 channels.
  std::vector<unsigned char> gray_png;
  ASSERT_TRUE(cv::imencode(".png", expected_gray, gray_png));
  Datum gray_datum;
  gray_datum.set_encoded(true);
  gray_datum.set_data(std::string(gray_png.begin(), gray_png.end()));
  EXPECT_EQ(this->Run("", TEST, gray_datum).size(), 12u);
  EXPECT_EQ(this->Run("force_color: true", TEST, gray_datum).size(), 36u);
}

TYPED_TEST(DataTransformerTest, SameSeedSameDrawsAcrossInstances) {
  const std::string text = "crop_size: 2 mirror: true";
  std::vector<std::vector<TypeParam>> first, second, other;
  DataTransformer<TypeParam> a(ParseText<TransformationParameter>(text), TRAIN, "l");
  DataTransformer<TypeParam> b(ParseText<TransformationParameter>(text), TRAIN, "l");
  DataTransformer<TypeParam> c(ParseText<TransformationParameter>(text), TRAIN, "l");
  a.set_seed(42);
  b.set_seed(42);
  c.set_seed(43);
  const Datum datum = Grid();
  for (int i = 0; i < 20; ++i) {
    std::vector<TypeParam> x(4), y(4), z(4);
    a.Transform(datum, a.DrawFor(i), x.data(), "r");
    b.Transform(datum, b.DrawFor(i), y.data(), "r");
    c.Transform(datum, c.DrawFor(i), z.data(), "r");
    first.push_back(x);
    second.push_back(y);
    other.push_back(z);
  }
  EXPECT_EQ(first, second);
  EXPECT_NE(first, other);
}

// A record's draw depends on its stream position alone: asked in any order, from any
// number of threads, the same position gives the same crop and mirror.
TYPED_TEST(DataTransformerTest, DrawsAreAFunctionOfThePosition) {
  DataTransformer<TypeParam> transformer(
      ParseText<TransformationParameter>("crop_size: 2 mirror: true"), TRAIN, "l");
  transformer.set_seed(7);
  std::vector<typename DataTransformer<TypeParam>::Draw> forward, backward(64);
  for (std::uint64_t p = 0; p < 64; ++p) forward.push_back(transformer.DrawFor(p));
  for (std::uint64_t p = 64; p-- > 0;) backward[p] = transformer.DrawFor(p);
  int mirrored = 0;
  std::set<std::pair<std::uint32_t, std::uint32_t>> offsets;
  for (std::size_t p = 0; p < forward.size(); ++p) {
    EXPECT_EQ(forward[p].crop_h, backward[p].crop_h) << p;
    EXPECT_EQ(forward[p].crop_w, backward[p].crop_w) << p;
    EXPECT_EQ(forward[p].mirror, backward[p].mirror) << p;
    mirrored += forward[p].mirror;
    offsets.insert({forward[p].crop_h % 2, forward[p].crop_w % 3});
  }
  // Grid() is 3 x 4: a 2 x 2 crop has 2 x 3 offsets, and about half the records mirror.
  EXPECT_EQ(offsets.size(), 6u);
  EXPECT_GT(mirrored, 16);
  EXPECT_LT(mirrored, 48);
  // TEST draws nothing: centred crop, no mirror.
  DataTransformer<TypeParam> test(ParseText<TransformationParameter>("crop_size: 2 mirror: true"),
                                  TEST, "l");
  EXPECT_FALSE(test.DrawFor(3).mirror);
  EXPECT_EQ(test.DrawFor(3).crop_h, 0u);
}

// Bad input: every error names the layer and what is wrong.
TYPED_TEST(DataTransformerTest, CropLargerThanTheRecord) {
  EXPECT_ERROR_WITH(this->Run("crop_size: 4", TEST, Grid()), "layer 'd' (Data)", "crop_size 4",
                    "record 'r'", "1x3x4");
}

TYPED_TEST(DataTransformerTest, MeanFileOfTheWrongShape) {
  TempDir dir;
  BlobProto mean;
  mean.set_num(1);
  mean.set_channels(1);
  mean.set_height(2);
  mean.set_width(2);
  for (int i = 0; i < 4; ++i) mean.add_data(0);
  const std::string path = dir.path() + "/mean.binaryproto";
  WriteProtoToBinaryFile(mean, path);
  EXPECT_ERROR_WITH(this->Run("mean_file: '" + path + "'", TEST, Grid()), "layer 'd' (Data)", path,
                    "1x2x2", "1x3x4");
  EXPECT_ERROR_WITH(this->Run("mean_file: '/no/such/mean.binaryproto'", TEST, Grid()),
                    "layer 'd' (Data)", "/no/such/mean.binaryproto");
  // A mean whose values disagree with its own shape.
  mean.add_data(1);
  WriteProtoToBinaryFile(mean, path);
  EXPECT_ERROR_WITH(this->Run("mean_file: '" + path + "'", TEST, Grid()), "layer 'd' (Data)",
                    "not a 1 x C x H x W mean image");
  // Dims whose product overflows 64 bits (tests/fuzz/regressions/mean/).
  BlobProto huge;
  for (long long dim : {1LL << 40, 1LL << 40, 16LL}) huge.mutable_shape()->add_dim(dim);
  huge.add_data(1);
  WriteProtoToBinaryFile(huge, path);
  EXPECT_ERROR_WITH(this->Run("mean_file: '" + path + "'", TEST, Grid()), "layer 'd' (Data)",
                    "not a 1 x C x H x W mean image");
}

TYPED_TEST(DataTransformerTest, RecordSizeDisagreesWithShape) {
  Datum datum = Grid();
  datum.mutable_data()->resize(10);
  EXPECT_ERROR_WITH(this->Run("", TEST, datum), "layer 'd' (Data)", "record 'r'", "holds 10",
                    "needs 12");
  // A corrupt shape whose pixel count overflows 64 bits (found by tests/fuzz/datum_fuzzer).
  Datum huge = Grid();
  huge.set_channels(1 << 30);
  huge.set_height(1 << 30);
  huge.set_width(1 << 30);
  EXPECT_ERROR_WITH(this->Run("", TEST, huge), "record 'r'", "needs more than 2^63");
  Datum empty;
  EXPECT_ERROR_WITH(this->Run("", TEST, empty), "record 'r'", "not an image record");
  Datum garbage;
  garbage.set_encoded(true);
  garbage.set_data("not a png");
  EXPECT_ERROR_WITH(this->Run("", TEST, garbage), "record 'r'", "does not decode");
}

TYPED_TEST(DataTransformerTest, ConflictingParameters) {
  EXPECT_ERROR_WITH(this->Run("mean_file: 'm' mean_value: 1", TEST, Grid()), "layer 'd' (Data)",
                    "mean_file", "mean_value", "not both");
  EXPECT_ERROR_WITH(this->Run("force_color: true force_gray: true", TEST, Grid()),
                    "force_color and force_gray");
  const Datum three = MakeDatum(3, 1, 1, 0, [](int c, int, int) { return c; });
  EXPECT_ERROR_WITH(this->Run("mean_value: 1 mean_value: 2", TEST, three), "layer 'd' (Data)",
                    "2 mean_value", "3 channels");
}

TYPED_TEST(DataTransformerTest, ExpectedShapeMismatchNamesBothShapes) {
  DataTransformer<TypeParam> transformer(TransformationParameter(), TEST, "layer 'd' (Data)");
  std::vector<TypeParam> out(12);
  const std::vector<int> expected = {1, 2, 2};
  EXPECT_ERROR_WITH(
      transformer.Transform(Grid(), transformer.DrawFor(0), out.data(), "record 'r'", &expected),
      "layer 'd' (Data)", "record 'r'", "1x3x4", "1x2x2", "crop_size");
}

}  // namespace
}  // namespace doppio
