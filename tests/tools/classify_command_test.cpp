// `doppio classify` run as a user runs it, on generated images and a net whose weights are
// set by hand, so that every printed probability is known in advance.
#include <gtest/gtest.h>

#include <cmath>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>

#include "cli_test_util.hpp"
#include "doppio/core/blob.hpp"
#include "doppio/core/net.hpp"
#include "doppio/util/io.hpp"
#include "test_util.hpp"

namespace doppio {
namespace {

using namespace cli_test;

// A 2 x 2 gray image in, three classes out: class 0 scores the top row, class 1 the bottom
// row, class 2 nothing.
const char* kGrayNet = R"(
name: "rows"
layer { name: "data" type: "Input" top: "data"
        input_param { shape { dim: 5 dim: 1 dim: 2 dim: 2 } } }
layer { name: "ip" type: "InnerProduct" bottom: "data" top: "score"
        inner_product_param { num_output: 3 } }
layer { name: "prob" type: "Softmax" bottom: "score" top: "prob" }
)";

// A 1 x 1 colour pixel in: class 0 scores blue, class 1 red (OpenCV's BGR order).
const char* kColourNet = R"(
name: "colours"
layer { name: "data" type: "Input" top: "data"
        input_param { shape { dim: 1 dim: 3 dim: 1 dim: 1 } } }
layer { name: "ip" type: "InnerProduct" bottom: "data" top: "score"
        inner_product_param { num_output: 2 } }
layer { name: "prob" type: "Softmax" bottom: "score" top: "prob" }
)";

class ClassifyCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(std::filesystem::exists(DoppioBinary()));
    WriteNet(kGrayNet, "gray", {1, 1, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0});
    WriteNet(kColourNet, "colour", {1, 0, 0, 0, 0, 1});
    WriteText(Path("labels.txt"), "top\nbottom\nnone\n");
  }
  std::string Path(const std::string& name) const { return dir_.path() + "/" + name; }

  // NAME.prototxt and NAME.caffemodel with the given inner product weights and zero biases.
  void WriteNet(const std::string& text, const std::string& name,
                const std::vector<float>& weights) {
    WriteText(Path(name + ".prototxt"), text);
    Net<float> net(ReadNetParamsFromTextString(text, name));
    Blob<float>* w = net.layer_by_name("ip")->blobs()[0].get();
    ASSERT_EQ(w->count(), static_cast<int>(weights.size()));
    std::copy(weights.begin(), weights.end(), w->mutable_cpu_data());
    Blob<float>* b = net.layer_by_name("ip")->blobs()[1].get();
    std::fill(b->mutable_cpu_data(), b->mutable_cpu_data() + b->count(), 0.f);
    NetParameter trained;
    net.ToProto(&trained);
    WriteProtoToBinaryFile(trained, Path(name + ".caffemodel"));
  }
  // A gray PNG from rows of pixel values.
  std::string GrayImage(const std::string& name, const std::vector<std::vector<int>>& rows) {
    cv::Mat image(static_cast<int>(rows.size()), static_cast<int>(rows[0].size()), CV_8UC1);
    for (std::size_t r = 0; r < rows.size(); ++r)
      for (std::size_t c = 0; c < rows[r].size(); ++c)
        image.at<unsigned char>(r, c) = static_cast<unsigned char>(rows[r][c]);
    EXPECT_TRUE(cv::imwrite(Path(name), image));
    return Path(name);
  }
  Result Classify(const std::string& net, std::vector<std::string> args) {
    args.insert(args.begin(), {"classify", "--model=" + Path(net + ".prototxt"),
                               "--weights=" + Path(net + ".caffemodel")});
    return RunDoppio(args, Path("log.txt"));
  }
  TempDir dir_;
};

// e^2 / (e^2 + 2): the probability of the class that scores 2 when the others score 0.
std::string Probability(double value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.4f", value);
  return text;
}
const double kTwoOfThree = std::exp(2.0) / (std::exp(2.0) + 2.0);  // 0.7870

TEST_F(ClassifyCommandTest, PrintsTopClassesWithProbabilitiesAndLabels) {
  const std::string top = GrayImage("top.png", {{255, 255}, {0, 0}});
  const std::string bottom = GrayImage("bottom.png", {{0, 0}, {255, 255}});
  const auto result = Classify(
      "gray",
      {"--scale=0.00392156862745098", "--labels=" + Path("labels.txt"), "--top_k=1", top, bottom});
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_CONTAINS(result.output, "---------- Prediction for " + top + " ----------\n" +
                                     Probability(kTwoOfThree) + " - \"top\"\n");
  EXPECT_CONTAINS(result.output, "---------- Prediction for " + bottom + " ----------\n" +
                                     Probability(kTwoOfThree) + " - \"bottom\"\n");
  // --top_k=1: one line per image.
  EXPECT_EQ(result.output.find("\"none\""), std::string::npos) << result.output;
}

TEST_F(ClassifyCommandTest, WithoutLabelsPrintsIndicesAndTopKIsCappedAtTheClasses) {
  const std::string top = GrayImage("top.png", {{255, 255}, {0, 0}});
  const auto result = Classify("gray", {"--scale=0.00392156862745098", "--top_k=10", top});
  ASSERT_EQ(result.exit_code, 0) << result.output;
  const double rest = 1.0 / (std::exp(2.0) + 2.0);
  EXPECT_CONTAINS(result.output, Probability(kTwoOfThree) + " - \"0\"\n" + Probability(rest));
  EXPECT_CONTAINS(result.output, Probability(rest) + " - \"1\"");
  EXPECT_CONTAINS(result.output, Probability(rest) + " - \"2\"");
}

TEST_F(ClassifyCommandTest, SubtractsMeanValuesBeforeScaling) {
  // (p - 255) x -1/255 turns the dark bottom row into ones.
  const std::string top = GrayImage("top.png", {{255, 255}, {0, 0}});
  const auto result = Classify("gray", {"--mean_value=255", "--scale=-0.00392156862745098",
                                        "--labels=" + Path("labels.txt"), "--top_k=1", top});
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_CONTAINS(result.output, Probability(kTwoOfThree) + " - \"bottom\"");
}

TEST_F(ClassifyCommandTest, SubtractsAMeanFile) {
  BlobProto mean;
  for (int d : {1, 1, 2, 2}) mean.mutable_shape()->add_dim(d);
  for (float v : {0.f, 0.f, 255.f, 255.f}) mean.add_data(v);
  WriteProtoToBinaryFile(mean, Path("mean.binaryproto"));
  const std::string top = GrayImage("top.png", {{255, 255}, {0, 0}});
  const auto result = Classify("gray", {"--mean=" + Path("mean.binaryproto"),
                                        "--scale=0.00392156862745098", "--top_k=1", top});
  ASSERT_EQ(result.exit_code, 0) << result.output;
  // Scores 2, -2, 0.
  const double expected = std::exp(2.0) / (std::exp(2.0) + std::exp(-2.0) + 1.0);  // 0.8668
  EXPECT_CONTAINS(result.output, Probability(expected) + " - \"0\"");
}

TEST_F(ClassifyCommandTest, ResizeLargerThanTheInputCropsTheCentre) {
  // Only the centre 2 x 2 of the 4 x 4 image reaches the net: its upper row is bright.
  const std::string image =
      GrayImage("big.png", {{0, 0, 0, 0}, {0, 255, 255, 0}, {255, 0, 0, 255}, {255, 0, 0, 255}});
  const auto result = Classify("gray", {"--resize=4", "--scale=0.00392156862745098",
                                        "--labels=" + Path("labels.txt"), "--top_k=1", image});
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_CONTAINS(result.output, Probability(kTwoOfThree) + " - \"top\"");
}

TEST_F(ClassifyCommandTest, ReadsColourImagesInBgrOrder) {
  cv::Mat blue(3, 3, CV_8UC3, cv::Scalar(255, 0, 0));  // B, G, R
  cv::Mat red(3, 3, CV_8UC3, cv::Scalar(0, 0, 255));
  ASSERT_TRUE(cv::imwrite(Path("blue.png"), blue));
  ASSERT_TRUE(cv::imwrite(Path("red.png"), red));
  WriteText(Path("colours.txt"), "blue\nred\n");
  const auto result =
      Classify("colour", {"--scale=0.00392156862745098", "--labels=" + Path("colours.txt"),
                          "--top_k=1", Path("blue.png"), Path("red.png")});
  ASSERT_EQ(result.exit_code, 0) << result.output;
  const std::string p = Probability(std::exp(1.0) / (std::exp(1.0) + 1.0));  // 0.7311
  EXPECT_CONTAINS(result.output, "blue.png ----------\n" + p + " - \"blue\"");
  EXPECT_CONTAINS(result.output, "red.png ----------\n" + p + " - \"red\"");
}

TEST_F(ClassifyCommandTest, BadInputsEndWithAClearError) {
  const std::string top = GrayImage("top.png", {{255, 255}, {0, 0}});
  WriteText(Path("two_labels.txt"), "a\nb\n");
  WriteText(Path("not_an_image.png"), "hello");
  WriteText(Path("no_input.prototxt"),
            "name: 'x' layer { name: 'd' type: 'DummyData' top: 'data' dummy_data_param { shape "
            "{ dim: 1 dim: 1 dim: 2 dim: 2 } } } layer { name: 'ip' type: 'InnerProduct' bottom: "
            "'data' top: 'score' inner_product_param { num_output: 3 } }");
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{Path("missing.png")}, "image '" + Path("missing.png") + "' does not exist"},
      {{Path("not_an_image.png")}, "cannot read image '" + Path("not_an_image.png") + "'"},
      {{}, "no image given"},
      {{"--labels=" + Path("two_labels.txt"), top}, "has 2 lines but the net has 3 classes"},
      {{"--resize=1", top}, "cannot be centre-cropped"},
      {{"--resize=3,4,5", top}, "--resize '3,4,5'"},
      {{"--mean_value=x", top}, "--mean_value 'x' is not a number"},
      {{"--top_k=0", top}, "--top_k must be > 0"},
      {{"--mean=" + Path("nothing.binaryproto"), top}, "nothing.binaryproto"},
  };
  for (const auto& [args, message] : cases) {
    const auto result = Classify("gray", args);
    EXPECT_EQ(result.exit_code, 1) << result.output;
    EXPECT_CONTAINS(result.output, message);
  }
  const auto no_input = RunDoppio({"classify", "--model=" + Path("no_input.prototxt"),
                                   "--weights=" + Path("gray.caffemodel"), top},
                                  Path("log.txt"));
  EXPECT_EQ(no_input.exit_code, 1);
  EXPECT_CONTAINS(no_input.output, "has no Input layer");
  const auto no_weights =
      RunDoppio({"classify", "--model=" + Path("gray.prototxt"), top}, Path("log.txt"));
  EXPECT_EQ(no_weights.exit_code, 1);
  EXPECT_CONTAINS(no_weights.output, "--weights is required");
}

TEST_F(ClassifyCommandTest, OtherCommandsRefusePositionalArguments) {
  const auto result = RunDoppio({"test", "--model=x", "stray"}, Path("log.txt"));
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_CONTAINS(result.output, "doppio test: unexpected argument 'stray'");
}

}  // namespace
}  // namespace doppio
