// The WindowData layer reading a window file and PNG images written by the test.
#include "doppio/layers/window_data_layer.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>

#include "../data/data_test_helpers.hpp"
#include "doppio/core/net.hpp"
#include "doppio/util/io.hpp"
#include "test_util.hpp"

namespace doppio {
namespace {

// BGR colours of the regions of img0.png.
const cv::Vec3b kOutside(10, 20, 30), kWindow1(200, 100, 50), kLeft(60, 61, 62),
    kRight(120, 121, 122), kImage1(5, 5, 5);

// img0.png is 16 x 12 (cols x rows) of kOutside with window 1 (x 2..5, y 2..9) in kWindow1
// and window 2 (x 8..13, y 1..6) in kLeft on its left half and kRight on its right half;
// img1.png is 8 x 8 of kImage1.
class WindowDataLayerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::filesystem::create_directories(Root());
    cv::Mat image0(12, 16, CV_8UC3, kOutside);
    image0(cv::Rect(2, 2, 4, 8)).setTo(kWindow1);
    image0(cv::Rect(8, 1, 3, 6)).setTo(kLeft);
    image0(cv::Rect(11, 1, 3, 6)).setTo(kRight);
    ASSERT_TRUE(cv::imwrite(Root() + "img0.png", image0));
    ASSERT_TRUE(cv::imwrite(Root() + "img1.png", cv::Mat(8, 8, CV_8UC3, kImage1)));
  }
  std::string Root() const { return dir_.path() + "/root/"; }
  std::string WindowFile() const { return dir_.path() + "/windows.txt"; }
  // Foreground windows 1 (class 1) and 2 (class 2), the background windows (class 3, made
  // 0) and a window between the thresholds, never used.
  void WriteAllWindows() const {
    std::ofstream(WindowFile()) << "# 0\nimg0.png\n3\n12\n16\n3\n"
                                << "1 0.9 2 2 5 9\n2 0.8 8 1 13 6\n3 0.1 0 0 15 11\n"
                                << "# 1\nimg1.png\n3 8 8\n2\n3 0.1 0 0 7 7\n2 0.4 0 0 3 3\n";
  }
  // One foreground window of img0.png, x1 y1 x2 y2.
  void WriteOneWindow(const std::string& corners) const {
    std::ofstream(WindowFile()) << "# 0\nimg0.png\n3 12 16\n1\n1 1.0 " << corners << "\n";
  }
  std::string NetText(const std::string& param, const std::string& transform,
                      const std::string& phase = "TRAIN", const std::string& extra = "") const {
    return "state { phase: " + phase +
           " } layer { name: 'windows' type: 'WindowData' top: 'data' top: 'label' "
           "transform_param { " +
           transform + " } window_data_param { source: '" + WindowFile() + "' root_folder: '" +
           Root() + "' fg_threshold: 0.5 bg_threshold: 0.3 " + param + " } " + extra + " }";
  }
  std::unique_ptr<Net<float>> MakeNet(const std::string& text, std::uint64_t seed = 1701) {
    return std::make_unique<Net<float>>(ReadNetParamsFromTextString(text, "test"), seed);
  }
  // One Forward: the data and the labels.
  std::pair<std::vector<float>, std::vector<float>> Next(Net<float>* net) {
    net->Forward();
    const auto data = net->blob_by_name("data");
    const auto label = net->blob_by_name("label");
    return {std::vector<float>(data->cpu_data(), data->cpu_data() + data->count()),
            std::vector<float>(label->cpu_data(), label->cpu_data() + label->count())};
  }

  TempDir dir_;
};

// Value (c, h, w) of sample n of a batch of 3 x crop x crop samples.
float At(const std::vector<float>& data, int crop, int n, int c, int h, int w) {
  return data[((static_cast<std::size_t>(n) * 3 + c) * crop + h) * crop + w];
}

TEST_F(WindowDataLayerTest, ForegroundAndBackgroundFollowTheThresholdsAndFraction) {
  WriteAllWindows();
  auto net = MakeNet(NetText("batch_size: 8 fg_fraction: 0.25", "crop_size: 4"));
  EXPECT_EQ(net->blob_by_name("data")->shape(), (std::vector<int>{8, 3, 4, 4}));
  std::set<int> foreground_seen;
  std::set<float> background_seen;
  for (int k = 0; k < 4; ++k) {
    const auto [data, labels] = Next(net.get());
    for (int n = 0; n < 8; ++n) {
      SCOPED_TRACE("batch " + std::to_string(k) + " sample " + std::to_string(n));
      // int(8 x 0.25) foreground samples, spread evenly: the 4th and the 8th.
      if (n != 3 && n != 7) {
        EXPECT_EQ(labels[n], 0);
        // The whole of img0 (its corner) or of img1.
        background_seen.insert(At(data, 4, n, 0, 0, 0));
      } else if (labels[n] == 1) {
        foreground_seen.insert(1);
        for (int c = 0; c < 3; ++c) EXPECT_EQ(At(data, 4, n, c, 1, 2), kWindow1[c]);
      } else {
        // Class 2 is window 2, never the window of img1 between the thresholds.
        ASSERT_EQ(labels[n], 2);
        foreground_seen.insert(2);
        EXPECT_EQ(At(data, 4, n, 0, 0, 0), kLeft[0]);
        EXPECT_EQ(At(data, 4, n, 0, 3, 3), kRight[0]);
      }
    }
  }
  EXPECT_EQ(foreground_seen, (std::set<int>{1, 2}));
  EXPECT_EQ(background_seen, (std::set<float>{float(kOutside[0]), float(kImage1[0])}));
}

TEST_F(WindowDataLayerTest, WarpStretchesTheWindowAndSquareWidensIt) {
  // Window 1 is 4 wide and 8 tall.
  WriteOneWindow("2 2 5 9");
  const std::string param = "batch_size: 2 fg_fraction: 1";
  auto warp = Next(MakeNet(NetText(param, "crop_size: 6")).get()).first;
  ASSERT_EQ(warp.size(), 2u * 3 * 6 * 6);
  for (int c = 0; c < 3; ++c) {
    for (int h = 0; h < 6; ++h) {
      for (int w = 0; w < 6; ++w) ASSERT_EQ(At(warp, 6, 0, c, h, w), kWindow1[c]);
    }
  }
  // Square: columns 0..8 and rows 2..10 of the image, so both sides are outside the window
  // (output columns 0 and 4 come from columns 0-1 and 6-7).
  auto square = Next(MakeNet(NetText(param + " crop_mode: 'square'", "crop_size: 6")).get()).first;
  EXPECT_EQ(At(square, 6, 0, 0, 2, 0), kOutside[0]);
  EXPECT_EQ(At(square, 6, 0, 0, 2, 2), kWindow1[0]);
  EXPECT_EQ(At(square, 6, 0, 0, 2, 4), kOutside[0]);
}

TEST_F(WindowDataLayerTest, MirrorFlipsInTrainOnlyAndContextOutsideTheImageIsZero) {
  // Window 2: kLeft on the left, kRight on the right.
  WriteOneWindow("8 1 13 6");
  const std::string param = "batch_size: 16 fg_fraction: 1";
  auto [train, labels] = Next(MakeNet(NetText(param, "crop_size: 4 mirror: true")).get());
  int mirrored = 0;
  for (int n = 0; n < 16; ++n) {
    const float left = At(train, 4, n, 0, 2, 0), right = At(train, 4, n, 0, 2, 3);
    ASSERT_TRUE((left == kLeft[0] && right == kRight[0]) ||
                (left == kRight[0] && right == kLeft[0]))
        << left << " " << right;
    mirrored += left == kRight[0];
  }
  EXPECT_GT(mirrored, 0);
  EXPECT_LT(mirrored, 16);
  auto test = Next(MakeNet(NetText(param, "crop_size: 4 mirror: true", "TEST")).get()).first;
  for (int n = 0; n < 16; ++n) EXPECT_EQ(At(test, 4, n, 0, 2, 0), kLeft[0]);

  // The corner window (0 0 3 3) with a pixel of context: the context above and left of it
  // is outside the image, so the first row and column stay 0; mirrored, the last column.
  WriteOneWindow("0 0 3 3");
  auto [context, unused] =
      Next(MakeNet(NetText(param + " context_pad: 1", "crop_size: 6 mirror: true")).get());
  int seen_mirrored = 0;
  for (int n = 0; n < 16; ++n) {
    const bool mirror = At(context, 6, n, 0, 3, 5) == 0;
    seen_mirrored += mirror;
    for (int i = 0; i < 6; ++i) {
      EXPECT_EQ(At(context, 6, n, 0, 0, i), 0);
      EXPECT_EQ(At(context, 6, n, 0, i, mirror ? 5 : 0), 0);
    }
    EXPECT_NE(At(context, 6, n, 0, 3, 3), 0);
    EXPECT_NE(At(context, 6, n, 0, 5, mirror ? 0 : 5), 0);
  }
  EXPECT_GT(seen_mirrored, 0);
}

TEST_F(WindowDataLayerTest, MeanValuesAndMeanFileAreSubtractedThenScaled) {
  WriteOneWindow("2 2 5 9");
  const std::string param = "batch_size: 1 fg_fraction: 1 scale: 0.5";
  auto values = Next(MakeNet(NetText(param,
                                     "crop_size: 4 mean_value: 1 mean_value: 2 "
                                     "mean_value: 3"))
                         .get())
                    .first;
  for (int c = 0; c < 3; ++c) EXPECT_EQ(At(values, 4, 0, c, 1, 1), (kWindow1[c] - (c + 1)) * 0.5f);

  // A 3 x 6 x 6 mean, mean(c, h, w) = 10 c + h + w / 8: its centre 4 x 4 is subtracted.
  BlobProto mean;
  mean.set_num(1);
  mean.set_channels(3);
  mean.set_height(6);
  mean.set_width(6);
  for (int c = 0; c < 3; ++c) {
    for (int h = 0; h < 6; ++h) {
      for (int w = 0; w < 6; ++w) mean.add_data(10.f * c + h + w / 8.f);
    }
  }
  const std::string path = dir_.path() + "/mean.binaryproto";
  WriteProtoToBinaryFile(mean, path);
  auto file = Next(MakeNet(NetText(param, "crop_size: 4 mean_file: '" + path + "'")).get()).first;
  for (int c = 0; c < 3; ++c) {
    for (int h = 0; h < 4; ++h) {
      for (int w = 0; w < 4; ++w) {
        EXPECT_EQ(At(file, 4, 0, c, h, w),
                  (kWindow1[c] - (10.f * c + h + 1 + (w + 1) / 8.f)) * 0.5f);
      }
    }
  }
  EXPECT_ERROR_WITH(MakeNet(NetText(param, "crop_size: 8 mean_file: '" + path + "'")),
                    "layer 'windows' (WindowData)", path, "centre 8 x 8");
}

TEST_F(WindowDataLayerTest, ShardsUniteToTheSingleProcessBatch) {
  WriteAllWindows();
  const std::string param = "fg_fraction: 0.5 batch_size: ";
  const std::string transform = "crop_size: 3 mirror: true";
  auto single = MakeNet(NetText(param + "6", transform), 7);
  auto r0 = MakeNet(
      NetText(param + "3", transform, "TRAIN", "data_param { shard_rank: 0 shard_size: 2 }"), 7);
  auto r1 = MakeNet(NetText(param + "3", transform, "TRAIN",
                            "data_param { shard_rank: 1 shard_size: 2 threads: 2 }"),
                    7);
  for (int k = 0; k < 3; ++k) {
    auto together = Next(r0.get());
    const auto second = Next(r1.get());
    together.first.insert(together.first.end(), second.first.begin(), second.first.end());
    together.second.insert(together.second.end(), second.second.begin(), second.second.end());
    EXPECT_EQ(together, Next(single.get())) << "batch " << k;
  }
}

// A resumed run draws what the uninterrupted one drew from the same stream position; cached
// images are read at set-up and give the same batches.
TEST_F(WindowDataLayerTest, ResumedAndCachedRunsDrawTheSameBatches) {
  WriteAllWindows();
  const std::string text = NetText("batch_size: 4 fg_fraction: 0.5", "crop_size: 3 mirror: true");
  auto straight = MakeNet(text);
  Next(straight.get());
  Next(straight.get());
  const std::uint64_t position = *straight->layers()[0]->stream_position();
  const auto third = Next(straight.get());
  straight.reset();
  auto resumed = MakeNet(text);
  resumed->layers()[0]->SeekStream(position);
  EXPECT_EQ(Next(resumed.get()), third);
  resumed.reset();

  // At most a batch read ahead: the third is read after the files are gone.
  auto cached =
      MakeNet(NetText("batch_size: 4 fg_fraction: 0.5 cache_images: true",
                      "crop_size: 3 mirror: true", "TRAIN", "data_param { prefetch: 1 }"));
  std::filesystem::remove(Root() + "img0.png");
  std::filesystem::remove(Root() + "img1.png");
  Next(cached.get());
  Next(cached.get());
  EXPECT_EQ(Next(cached.get()), third);
}

TEST_F(WindowDataLayerTest, BadWindowFilesNameTheFileAndLine) {
  const std::string net = NetText("batch_size: 2", "crop_size: 4");
  const std::string file = WindowFile();
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {"0\nimg0.png\n", {file + ":1:", "expected '# <image index>'"}},
      {"# 0\nimg0.png\n3 12 16\n2\n1 0.9 2 2 5 9\n", {file + ":5:", "the file ends", "window 2"}},
      {"# 0\nimg0.png\n3 12 16\n1\n1 0.9 2 2 16 9\n", {file + ":5:", "not inside the 16 x 12"}},
      {"# 0\nimg0.png\n3 12 16\n1\n0 0.9 2 2 5 9\n", {file + ":5:", "must have a class > 0"}},
      {"# 0\nimg0.png\n3 12 16\n1\n1 high 2 2 5 9\n", {file + ":5:", "overlap", "'high'"}},
      {"# 0\nimg0.png\n2 12 16\n0\n", {file + ":3:", "2 channels"}},
      {"# 0\nimg0.png\n3 12 16\n1\n1 0.9 2 2 5 9\n", {"no background windows"}},
      {"", {"lists no images"}},
  };
  for (const auto& [text, pieces] : cases) {
    SCOPED_TRACE(text);
    std::ofstream(file) << text;
    ExpectError([&] { MakeNet(net); }, pieces);
  }
  WriteOneWindow("2 2 5 9");
  EXPECT_ERROR_WITH(MakeNet(NetText("batch_size: 2 fg_fraction: 1", "")), "crop_size is not set");
  // An image whose size disagrees with its header, and a missing one: the first image is read
  // at set-up.
  std::ofstream(file) << "# 0\nimg0.png\n3 12 15\n1\n1 0.9 2 2 5 9\n";
  EXPECT_ERROR_WITH(MakeNet(NetText("batch_size: 2 fg_fraction: 1", "crop_size: 4")),
                    "img0.png' (line 2 of '" + file + "') is 16 x 12", "says 15 x 12");
  std::filesystem::remove(Root() + "img0.png");
  EXPECT_ERROR_WITH(MakeNet(NetText("batch_size: 2 fg_fraction: 1", "crop_size: 4")),
                    "layer 'windows' (WindowData)", "img0.png' (line 2", "cannot read");
}

}  // namespace
}  // namespace doppio
