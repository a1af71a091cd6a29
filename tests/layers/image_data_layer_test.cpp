// The ImageData layer reading a generated list of PNG files.
#include "doppio/layers/image_data_layer.hpp"

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

// Image i is 3 x 4 (rows x cols) BGR with blue = 10 i + w, green = h, red = 100.
cv::Mat TestImage(int i) {
  cv::Mat image(3, 4, CV_8UC3);
  for (int h = 0; h < 3; ++h) {
    for (int w = 0; w < 4; ++w) image.at<cv::Vec3b>(h, w) = cv::Vec3b(10 * i + w, h, 100);
  }
  return image;
}

class ImageDataLayerTest : public ::testing::Test {
 protected:
  // Writes `n` images as img<i>.png under root/ (every other one in a sub-folder) and a list
  // with label 100 + i.
  void SetUp() override {
    std::filesystem::create_directories(dir_.path() + "/root/sub dir");
    std::ofstream list(List());
    for (int i = 0; i < n_; ++i) {
      const std::string name = (i % 2 ? "sub dir/img" : "img") + std::to_string(i) + ".png";
      ASSERT_TRUE(cv::imwrite(Root() + name, TestImage(i)));
      list << name << " " << 100 + i << "\n";
    }
  }
  std::string Root() const { return dir_.path() + "/root/"; }
  std::string List() const { return dir_.path() + "/list.txt"; }
  std::string NetText(const std::string& param, const std::string& transform = "",
                      const std::string& phase = "TEST") const {
    return "state { phase: " + phase +
           " } layer { name: 'images' type: 'ImageData' top: 'data' top: 'label' "
           "transform_param { " +
           transform + " } image_data_param { source: '" + List() + "' root_folder: '" + Root() +
           "' " + param + " } }";
  }
  std::unique_ptr<Net<float>> MakeNet(const std::string& text, std::uint64_t seed = 1701) {
    return std::make_unique<Net<float>>(ReadNetParamsFromTextString(text, "test"), seed);
  }
  std::vector<float> Labels(Net<float>* net) {
    net->Forward();
    const auto label = net->blob_by_name("label");
    return std::vector<float>(label->cpu_data(), label->cpu_data() + label->count());
  }

  TempDir dir_;
  const int n_ = 5;
};

TEST_F(ImageDataLayerTest, ReadsPixelsAndLabelsInListOrder) {
  auto net = MakeNet(NetText("batch_size: 2"));
  const auto data = net->blob_by_name("data");
  EXPECT_EQ(data->shape(), (std::vector<int>{2, 3, 3, 4}));
  const std::vector<std::vector<int>> batches = {{0, 1}, {2, 3}, {4, 0}};
  for (const auto& batch : batches) {
    EXPECT_EQ(Labels(net.get()), (std::vector<float>{100.f + batch[0], 100.f + batch[1]}));
    for (int b = 0; b < 2; ++b) {
      const float* image = data->cpu_data() + b * 36;
      for (int h = 0; h < 3; ++h) {
        for (int w = 0; w < 4; ++w) {
          EXPECT_EQ(image[(0 * 3 + h) * 4 + w], 10 * batch[b] + w);  // blue plane
          EXPECT_EQ(image[(1 * 3 + h) * 4 + w], h);                  // green
          EXPECT_EQ(image[(2 * 3 + h) * 4 + w], 100);                // red
        }
      }
    }
  }
}

TEST_F(ImageDataLayerTest, ResizeGrayAndTransform) {
  auto net = MakeNet(NetText("batch_size: 1 new_height: 6 new_width: 8 is_color: false",
                             "crop_size: 4 scale: 0.5"));
  EXPECT_EQ(net->blob_by_name("data")->shape(), (std::vector<int>{1, 1, 4, 4}));
  Labels(net.get());
}

TEST_F(ImageDataLayerTest, ShuffleIsAPermutationPerEpochAndSeeded) {
  auto epochs = [&](std::uint64_t seed) {
    auto net = MakeNet(NetText("batch_size: 5 shuffle: true"), seed);
    std::vector<std::vector<float>> out;
    for (int e = 0; e < 3; ++e) out.push_back(Labels(net.get()));
    return out;
  };
  const auto a = epochs(7), b = epochs(7);
  EXPECT_EQ(a, b);
  for (const auto& epoch : a) {
    EXPECT_EQ(std::set<float>(epoch.begin(), epoch.end()),
              (std::set<float>{100, 101, 102, 103, 104}));
  }
  // Reshuffled each epoch (three equal orders of five would be a 1 in 576 coincidence).
  EXPECT_FALSE(a[0] == a[1] && a[1] == a[2]);
}

TEST_F(ImageDataLayerTest, ShardsOfAShuffledListUniteToTheSingleProcessBatch) {
  auto single = MakeNet(NetText("batch_size: 4 shuffle: true"), 11);
  auto r0 = MakeNet(NetText("batch_size: 2 shuffle: true shard_rank: 0 shard_size: 2"), 11);
  auto r1 =
      MakeNet(NetText("batch_size: 2 shuffle: true shard_rank: 1 shard_size: 2 threads: 2"), 11);
  for (int k = 0; k < 6; ++k) {
    std::vector<float> together = Labels(r0.get());
    const std::vector<float> second = Labels(r1.get());
    together.insert(together.end(), second.begin(), second.end());
    EXPECT_EQ(together, Labels(single.get())) << "batch " << k;
  }
}

TEST_F(ImageDataLayerTest, MissingImageNamesFileAndLine) {
  // The first image is read at set-up; a later one in the prefetch thread.
  std::filesystem::remove(Root() + "sub dir/img3.png");
  auto net = MakeNet(NetText("batch_size: 2"));
  Labels(net.get());
  EXPECT_ERROR_WITH(Labels(net.get()), "layer 'images' (ImageData)", "sub dir/img3.png",
                    "line 4 of '" + List() + "'");
  std::filesystem::remove(Root() + "img0.png");
  EXPECT_ERROR_WITH(MakeNet(NetText("batch_size: 2")), "layer 'images' (ImageData)", "img0.png",
                    "line 1");
}

TEST_F(ImageDataLayerTest, UnreadableImageNamesFileAndLine) {
  std::ofstream(Root() + "img2.png") << "this is not a png";
  auto net = MakeNet(NetText("batch_size: 3"));
  EXPECT_ERROR_WITH(Labels(net.get()), "layer 'images' (ImageData)", "img2.png", "line 3");
}

TEST_F(ImageDataLayerTest, BadListsAndParameters) {
  EXPECT_ERROR_WITH(MakeNet(NetText("batch_size: 0")), "layer 'images' (ImageData)", "batch_size");
  EXPECT_ERROR_WITH(MakeNet(NetText("batch_size: 1 new_height: 5")), "new_height", "new_width");
  EXPECT_ERROR_WITH(MakeNet(NetText("batch_size: 1", "crop_size: 5")), "layer 'images'",
                    "crop_size 5");
  std::ofstream(List(), std::ios::app) << "img9.png nine\n";
  EXPECT_ERROR_WITH(MakeNet(NetText("batch_size: 1")), "layer 'images'", List() + ":6",
                    "not an integer");
  std::ofstream(List()) << "lonely-path\n";
  EXPECT_ERROR_WITH(MakeNet(NetText("batch_size: 1")), List() + ":1", "expected 'path label'");
  std::ofstream(List()) << "\n";
  EXPECT_ERROR_WITH(MakeNet(NetText("batch_size: 1")), "names no images");
  std::filesystem::remove(List());
  EXPECT_ERROR_WITH(MakeNet(NetText("batch_size: 1")), "layer 'images'", List(), "cannot open");
}

}  // namespace
}  // namespace doppio
