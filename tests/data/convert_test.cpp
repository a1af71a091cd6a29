// The converters, through their library functions and as the tools a user runs.
#include "doppio/data/convert.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>

#include "data_test_helpers.hpp"
#include "doppio/data/image_io.hpp"
#include "doppio/util/io.hpp"
#include "test_util.hpp"

namespace doppio {
namespace {

using testing_data::ReadAllDatums;
using testing_data::RunTool;

void PutBigEndian(std::string* out, std::uint32_t value) {
  for (int shift = 24; shift >= 0; shift -= 8) out->push_back(static_cast<char>(value >> shift));
}

// Writes idx files of n images of rows x cols with pixel(i, p) = (7 i + p) % 256 and label
// i % 10.
void WriteIdx(const std::string& images, const std::string& labels, int n, int rows, int cols) {
  std::string image_bytes, label_bytes;
  PutBigEndian(&image_bytes, 2051);
  PutBigEndian(&image_bytes, n);
  PutBigEndian(&image_bytes, rows);
  PutBigEndian(&image_bytes, cols);
  for (int i = 0; i < n; ++i) {
    for (int p = 0; p < rows * cols; ++p)
      image_bytes.push_back(static_cast<char>((7 * i + p) % 256));
  }
  PutBigEndian(&label_bytes, 2049);
  PutBigEndian(&label_bytes, n);
  for (int i = 0; i < n; ++i) label_bytes.push_back(static_cast<char>(i % 10));
  std::ofstream(images, std::ios::binary) << image_bytes;
  std::ofstream(labels, std::ios::binary) << label_bytes;
}

TEST(ConvertMnistTest, RoundTripsPixelsLabelsAndKeys) {
  TempDir dir;
  const std::string images = dir.path() + "/images", labels = dir.path() + "/labels";
  WriteIdx(images, labels, 25, 4, 3);
  const ConvertSummary summary = ConvertMnist(images, labels, dir.path() + "/db");
  EXPECT_EQ(summary.records, 25u);
  std::vector<std::string> keys;
  const auto datums = ReadAllDatums(dir.path() + "/db", &keys);
  ASSERT_EQ(datums.size(), 25u);
  for (int i = 0; i < 25; ++i) {
    EXPECT_EQ(keys[i], FormatKey(i, 8));
    EXPECT_EQ(keys[i].size(), 8u);
    EXPECT_EQ(datums[i].channels(), 1);
    EXPECT_EQ(datums[i].height(), 4);
    EXPECT_EQ(datums[i].width(), 3);
    EXPECT_EQ(datums[i].label(), i % 10);
    EXPECT_FALSE(datums[i].encoded());
    ASSERT_EQ(datums[i].data().size(), 12u);
    for (int p = 0; p < 12; ++p) {
      EXPECT_EQ(static_cast<unsigned char>(datums[i].data()[p]), (7 * i + p) % 256);
    }
  }
}

TEST(ConvertMnistTest, ToolPrintsSummaryAndNamesBadFiles) {
  TempDir dir;
  const std::string images = dir.path() + "/images", labels = dir.path() + "/labels";
  WriteIdx(images, labels, 5, 2, 2);
  const auto ok = RunTool("convert_mnist_data", images + " " + labels + " " + dir.path() + "/db");
  EXPECT_EQ(ok.exit_code, 0) << ok.output;
  EXPECT_NE(ok.output.find("wrote 5 records"), std::string::npos) << ok.output;
  EXPECT_EQ(ReadAllDatums(dir.path() + "/db", nullptr).size(), 5u);

  // The output exists already.
  auto again = RunTool("convert_mnist_data", images + " " + labels + " " + dir.path() + "/db");
  EXPECT_EQ(again.exit_code, 1);
  EXPECT_NE(again.output.find("already exists"), std::string::npos) << again.output;

  // Labels and images swapped: wrong magic number, named.
  auto swapped = RunTool("convert_mnist_data", labels + " " + images + " " + dir.path() + "/db2");
  EXPECT_EQ(swapped.exit_code, 1);
  EXPECT_NE(swapped.output.find(labels + ": not an MNIST image file"), std::string::npos)
      << swapped.output;

  // Missing file.
  auto missing = RunTool("convert_mnist_data", "/no/such/images " + labels + " x");
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.output.find("/no/such/images"), std::string::npos);

  // Usage without arguments.
  EXPECT_EQ(RunTool("convert_mnist_data", "").exit_code, 1);
}

TEST(ConvertMnistTest, LevelDbBackendIsRefused) {
  TempDir dir;
  const std::string images = dir.path() + "/images", labels = dir.path() + "/labels";
  WriteIdx(images, labels, 2, 2, 2);
  const auto run = RunTool("convert_mnist_data",
                           "--backend=leveldb " + images + " " + labels + " " + dir.path() + "/db");
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_NE(run.output.find("LEVELDB is not supported"), std::string::npos) << run.output;
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/db"));
}

TEST(ConvertMnistTest, TruncatedOrMismatchedFiles) {
  TempDir dir;
  const std::string images = dir.path() + "/images", labels = dir.path() + "/labels";
  WriteIdx(images, labels, 5, 2, 2);
  const std::string short_labels = dir.path() + "/labels3";
  WriteIdx(dir.path() + "/i3", short_labels, 3, 2, 2);
  EXPECT_ERROR_WITH(ConvertMnist(images, short_labels, dir.path() + "/a"), "5 images", "3 labels");
  std::filesystem::resize_file(images, 16 + 4 * 5 - 1);
  EXPECT_ERROR_WITH(ConvertMnist(images, labels, dir.path() + "/b"), images, "truncated");
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/b"));
}

// CIFAR-10 binary: record i of file f has label (i + f) % 10 and pixel p = (i + 3 f + p) % 256.
void WriteCifarBatch(const std::string& path, int file, int records) {
  std::string bytes;
  for (int i = 0; i < records; ++i) {
    bytes.push_back(static_cast<char>((i + file) % 10));
    for (int p = 0; p < 3072; ++p) bytes.push_back(static_cast<char>((i + 3 * file + p) % 256));
  }
  std::ofstream(path, std::ios::binary) << bytes;
}

TEST(ConvertCifarTest, RoundTripsTrainAndTest) {
  TempDir dir;
  const std::string in = dir.path() + "/bin";
  std::filesystem::create_directory(in);
  for (int f = 1; f <= 5; ++f)
    WriteCifarBatch(in + "/data_batch_" + std::to_string(f) + ".bin", f, 3);
  WriteCifarBatch(in + "/test_batch.bin", 0, 4);
  const auto run = RunTool("convert_cifar_data", in + " " + dir.path() + "/out");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("wrote 15 records"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("wrote 4 records"), std::string::npos) << run.output;

  std::vector<std::string> keys;
  const auto train = ReadAllDatums(dir.path() + "/out/cifar10_train_lmdb", &keys);
  ASSERT_EQ(train.size(), 15u);
  for (int n = 0; n < 15; ++n) {
    const int f = n / 3 + 1, i = n % 3;
    EXPECT_EQ(keys[n], FormatKey(n, 5));
    EXPECT_EQ(train[n].channels(), 3);
    EXPECT_EQ(train[n].height(), 32);
    EXPECT_EQ(train[n].width(), 32);
    EXPECT_EQ(train[n].label(), (i + f) % 10);
    ASSERT_EQ(train[n].data().size(), 3072u);
    for (int p = 0; p < 3072; p += 97) {
      EXPECT_EQ(static_cast<unsigned char>(train[n].data()[p]), (i + 3 * f + p) % 256);
    }
  }
  const auto test = ReadAllDatums(dir.path() + "/out/cifar10_test_lmdb", nullptr);
  ASSERT_EQ(test.size(), 4u);
  EXPECT_EQ(test[3].label(), 3);
  EXPECT_EQ(static_cast<unsigned char>(test[3].data()[100]), 103);
}

TEST(ConvertCifarTest, BadInput) {
  TempDir dir;
  const std::string in = dir.path() + "/bin";
  std::filesystem::create_directory(in);
  EXPECT_ERROR_WITH(ConvertCifar10(in, dir.path() + "/out"), "data_batch_1.bin", "missing");
  for (int f = 1; f <= 5; ++f)
    WriteCifarBatch(in + "/data_batch_" + std::to_string(f) + ".bin", f, 1);
  EXPECT_ERROR_WITH(ConvertCifar10(in, dir.path() + "/out"), "test_batch.bin", "missing");
  WriteCifarBatch(in + "/test_batch.bin", 0, 1);
  std::filesystem::resize_file(in + "/data_batch_2.bin", 3000);
  EXPECT_ERROR_WITH(ConvertCifar10(in, dir.path() + "/out2"), "data_batch_2.bin",
                    "not a whole number");
}

// Writes PNGs a.png (2 x 3, colour), b.png (3 x 2), c.png (2 x 3, gray) and a list.
struct ImageFolder {
  TempDir dir;
  std::vector<cv::Mat> images;
  ImageFolder() {
    std::filesystem::create_directories(dir.path() + "/root/sub");
    cv::Mat a(2, 3, CV_8UC3), b(3, 2, CV_8UC3), c(2, 3, CV_8UC1);
    cv::randu(a, 0, 256);
    cv::randu(b, 0, 256);
    cv::randu(c, 0, 256);
    images = {a, b, c};
    cv::imwrite(dir.path() + "/root/sub/a.png", a);
    cv::imwrite(dir.path() + "/root/b.png", b);
    cv::imwrite(dir.path() + "/root/c.png", c);
    std::ofstream(dir.path() + "/list.txt") << "sub/a.png 3\nb.png 1\n\nc.png 4\n";
  }
  std::string root() const { return dir.path() + "/root/"; }
  std::string list() const { return dir.path() + "/list.txt"; }
};

TEST(ConvertImageSetTest, RawRoundTripKeepsPixelsLabelsAndListOrder) {
  ImageFolder folder;
  const std::string db = folder.dir.path() + "/db";
  ImageSetOptions options;
  EXPECT_EQ(ConvertImageSet(folder.root(), folder.list(), db, options).records, 3u);
  std::vector<std::string> keys;
  const auto datums = ReadAllDatums(db, &keys);
  ASSERT_EQ(datums.size(), 3u);
  EXPECT_EQ(keys,
            (std::vector<std::string>{"00000000_sub/a.png", "00000001_b.png", "00000002_c.png"}));
  EXPECT_EQ(datums[0].label(), 3);
  EXPECT_EQ(datums[1].label(), 1);
  EXPECT_EQ(datums[2].label(), 4);
  for (int i = 0; i < 3; ++i) {
    cv::Mat color = folder.images[i];
    if (color.channels() == 1) cv::merge(std::vector<cv::Mat>{color, color, color}, color);
    Datum expected;
    MatToDatum(color, &expected);
    EXPECT_EQ(datums[i].channels(), 3);
    EXPECT_EQ(datums[i].height(), color.rows);
    EXPECT_EQ(datums[i].width(), color.cols);
    EXPECT_EQ(datums[i].data(), expected.data()) << i;
  }
}

TEST(ConvertImageSetTest, GrayResizeEncodedAndShuffle) {
  ImageFolder folder;
  // Gray and resized: every record 1 x 4 x 5.
  ImageSetOptions gray;
  gray.gray = true;
  gray.resize_height = 4;
  gray.resize_width = 5;
  gray.check_size = true;
  ConvertImageSet(folder.root(), folder.list(), folder.dir.path() + "/gray", gray);
  for (const Datum& d : ReadAllDatums(folder.dir.path() + "/gray", nullptr)) {
    EXPECT_EQ(d.channels(), 1);
    EXPECT_EQ(d.height(), 4);
    EXPECT_EQ(d.width(), 5);
    EXPECT_EQ(d.data().size(), 20u);
  }
  // Encoded PNG keeps the file's own bytes, which decode to the original pixels.
  ImageSetOptions encoded;
  encoded.encoded = true;
  ConvertImageSet(folder.root(), folder.list(), folder.dir.path() + "/enc", encoded);
  const auto enc = ReadAllDatums(folder.dir.path() + "/enc", nullptr);
  ASSERT_EQ(enc.size(), 3u);
  EXPECT_TRUE(enc[0].encoded());
  const cv::Mat decoded = DecodeImage(enc[0].data(), cv::IMREAD_COLOR);
  EXPECT_EQ(cv::norm(decoded, folder.images[0], cv::NORM_INF), 0);
  // Re-encoded as JPEG when asked.
  ImageSetOptions jpg = encoded;
  jpg.encode_type = "jpg";
  ConvertImageSet(folder.root(), folder.list(), folder.dir.path() + "/jpg", jpg);
  const auto jpgs = ReadAllDatums(folder.dir.path() + "/jpg", nullptr);
  EXPECT_EQ(static_cast<unsigned char>(jpgs[0].data()[0]), 0xff);  // JPEG's SOI marker
  EXPECT_EQ(static_cast<unsigned char>(jpgs[0].data()[1]), 0xd8);
  // Shuffled: the same records, another order, the same order for the same seed.
  ImageSetOptions shuffled;
  shuffled.shuffle = true;
  std::vector<std::string> keys1, keys2;
  ConvertImageSet(folder.root(), folder.list(), folder.dir.path() + "/s1", shuffled);
  ConvertImageSet(folder.root(), folder.list(), folder.dir.path() + "/s2", shuffled);
  ReadAllDatums(folder.dir.path() + "/s1", &keys1);
  ReadAllDatums(folder.dir.path() + "/s2", &keys2);
  EXPECT_EQ(keys1, keys2);
  EXPECT_EQ(keys1.size(), 3u);
}

TEST(ConvertImageSetTest, ToolRunsWithCaffesFlags) {
  ImageFolder folder;
  const auto run =
      RunTool("convert_imageset", "--resize_height=6 --resize_width=6 --shuffle " + folder.root() +
                                      " " + folder.list() + " " + folder.dir.path() + "/db");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("wrote 3 records"), std::string::npos) << run.output;
}

TEST(ConvertImageSetTest, MissingImageNamesFileAndLine) {
  ImageFolder folder;
  std::ofstream(folder.list(), std::ios::app) << "nothere.png 2\n";
  EXPECT_ERROR_WITH(
      ConvertImageSet(folder.root(), folder.list(), folder.dir.path() + "/db", ImageSetOptions()),
      folder.root() + "nothere.png", "line 5", folder.list());
  // An unreadable file (not an image).
  std::ofstream(folder.dir.path() + "/root/bad.png") << "not a png";
  std::ofstream(folder.list()) << "bad.png 1\n";
  const auto run = RunTool("convert_imageset",
                           folder.root() + " " + folder.list() + " " + folder.dir.path() + "/db2");
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_NE(run.output.find("bad.png' (line 1"), std::string::npos) << run.output;
}

TEST(ConvertImageSetTest, BadListsAndOptions) {
  ImageFolder folder;
  std::ofstream(folder.list()) << "a.png 1\nno-label-here\n";
  EXPECT_ERROR_WITH(
      ConvertImageSet(folder.root(), folder.list(), folder.dir.path() + "/a", ImageSetOptions()),
      folder.list() + ":2", "expected 'path label'");
  std::ofstream(folder.list()) << "b.png x1\n";
  EXPECT_ERROR_WITH(
      ConvertImageSet(folder.root(), folder.list(), folder.dir.path() + "/b", ImageSetOptions()),
      folder.list() + ":1", "not an integer");
  std::ofstream(folder.list()) << "sub/a.png 0\nb.png 1\n";
  ImageSetOptions check;
  check.check_size = true;
  EXPECT_ERROR_WITH(ConvertImageSet(folder.root(), folder.list(), folder.dir.path() + "/c", check),
                    "--check_size", "b.png", "line 2");
  ImageSetOptions half;
  half.resize_height = 4;
  EXPECT_ERROR_WITH(ConvertImageSet(folder.root(), folder.list(), folder.dir.path() + "/d", half),
                    "--resize_height and --resize_width");
  ImageSetOptions format;
  format.encoded = true;
  format.encode_type = "nosuchformat";
  EXPECT_ERROR_WITH(ConvertImageSet(folder.root(), folder.list(), folder.dir.path() + "/e", format),
                    "nosuchformat");
  std::ofstream(folder.list()) << "\n\n";
  EXPECT_ERROR_WITH(
      ConvertImageSet(folder.root(), folder.list(), folder.dir.path() + "/f", ImageSetOptions()),
      "names no images");
}

TEST(ComputeImageMeanTest, MeanOfRawAndEncodedRecords) {
  TempDir dir;
  // Records 1 x 2 x 2 with pixels i + p: the mean is 1.5 + p for i in 0..3.
  std::vector<Datum> datums;
  for (int i = 0; i < 4; ++i) {
    datums.push_back(
        testing_data::MakeDatum(1, 2, 2, 0, [i](int, int h, int w) { return i + 2 * h + w; }));
  }
  testing_data::WriteDatumLmdb(dir.path() + "/db", datums);
  const auto run =
      RunTool("compute_image_mean", dir.path() + "/db " + dir.path() + "/mean.binaryproto");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("read 4 records"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("channel [0]: 3"), std::string::npos) << run.output;
  BlobProto mean;
  ReadProtoFromBinaryFile(dir.path() + "/mean.binaryproto", &mean);
  EXPECT_EQ(mean.num(), 1);
  EXPECT_EQ(mean.channels(), 1);
  EXPECT_EQ(mean.height(), 2);
  EXPECT_EQ(mean.width(), 2);
  ASSERT_EQ(mean.data_size(), 4);
  for (int p = 0; p < 4; ++p) EXPECT_FLOAT_EQ(mean.data(p), 1.5f + p);

  // Encoded (PNG) records give the mean of their decoded pixels.
  cv::Mat a(1, 2, CV_8UC3, cv::Scalar(10, 20, 30)), b(1, 2, CV_8UC3, cv::Scalar(30, 40, 50));
  std::vector<std::string> values;
  for (const cv::Mat& m : {a, b}) {
    std::vector<unsigned char> png;
    cv::imencode(".png", m, png);
    Datum d;
    d.set_encoded(true);
    d.set_data(std::string(png.begin(), png.end()));
    values.push_back(d.SerializeAsString());
  }
  testing_data::WriteLmdb(dir.path() + "/enc", values);
  std::vector<double> channels;
  EXPECT_EQ(ComputeImageMean(dir.path() + "/enc", "", &channels).records, 2u);
  EXPECT_EQ(channels, (std::vector<double>{20, 30, 40}));
}

TEST(ComputeImageMeanTest, BadInput) {
  TempDir dir;
  EXPECT_ERROR_WITH(ComputeImageMean("/no/such/db", ""), "/no/such/db");
  testing_data::WriteDatumLmdb(
      dir.path() + "/mixed",
      {testing_data::MakeDatum(1, 2, 2, 0, [](int, int, int) { return 1; }),
       testing_data::MakeDatum(1, 3, 2, 0, [](int, int, int) { return 1; })});
  EXPECT_ERROR_WITH(ComputeImageMean(dir.path() + "/mixed", ""), "record '00000001'", "1x3x2",
                    "1x2x2");
  testing_data::WriteLmdb(dir.path() + "/text", {"hello, world"});
  const auto run = RunTool("compute_image_mean", dir.path() + "/text");
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_NE(run.output.find("record '00000000'"), std::string::npos) << run.output;
}

}  // namespace
}  // namespace doppio
