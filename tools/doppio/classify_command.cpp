// doppio classify: runs a deploy net with trained weights on image files and prints the
// top-k classes of each with their probabilities, like Caffe's cpp_classification example.
//
//   doppio classify --model=models/lenet/deploy.prototxt --weights=lenet.caffemodel \
//       --scale=0.00390625 --labels=labels.txt digit.png
//
// Each image is read through OpenCV (gray for a 1-channel input, BGR for 3 channels, as the
// data sets were built), resized, and turned into network input by the data pipeline's
// DataTransformer in the TEST phase. Images are resized to --resize, else to the mean file's
// size, else to the net's input; when that is larger than the input, the centre is cropped,
// as `doppio test` sees validation records (ImageNet: 256 x 256 with the mean, then the
// 227 x 227 centre).
#include <gflags/gflags.h>
#include <glog/logging.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <numeric>

#include <opencv2/core.hpp>

#include "command.hpp"
#include "common_flags.hpp"
#include "doppio/core/blob.hpp"
#include "doppio/core/net.hpp"
#include "doppio/data/data_transformer.hpp"
#include "doppio/data/image_io.hpp"
#include "doppio/solvers/weights.hpp"
#include "doppio/util/io.hpp"

DEFINE_string(mean, "",
              "A mean file (.binaryproto, as compute_image_mean writes) to subtract from every "
              "image; its size decides the resize before the centre crop.");
DEFINE_string(mean_value, "",
              "Mean pixel values to subtract instead of a mean file: one for all channels or "
              "one per channel in BGR order, e.g. 104,117,123.");
DEFINE_double(scale, 1.0,
              "Multiply the pixels (after the mean) by this, as transform_param.scale does "
              "(0.00390625 for the MNIST nets).");
DEFINE_string(labels, "",
              "A text file with one class name per line (line i names class i); without it "
              "the class indices are printed.");
DEFINE_int32(top_k, 5, "How many of the most probable classes to print per image.");
DEFINE_string(resize, "",
              "Resize images to H or H,W pixels, then crop the centre to the net's input "
              "(default: the mean file's size, else the input's size).");
DEFINE_string(output, "",
              "The net output blob to rank; empty: the net's last output (e.g. 'prob').");

namespace doppio {
namespace {

std::vector<std::string> ReadLabels(const std::string& path) {
  std::ifstream in(path);
  DOPPIO_ENSURE(in.good()) << "classify: --labels file '" << path << "' cannot be opened";
  std::vector<std::string> labels;
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    labels.push_back(line);
  }
  return labels;
}

// The first Input layer's first top: the image blob the images go into.
Blob<float>* FindImageInput(const Net<float>& net, const std::string& model) {
  for (std::size_t i = 0; i < net.layers().size(); ++i) {
    if (std::string(net.layers()[i]->type()) == "Input" && !net.top_vecs()[i].empty()) {
      return net.top_vecs()[i][0];
    }
  }
  DOPPIO_FAIL() << "classify: " << model
                << " has no Input layer (give a deploy net, whose first layer is "
                   "`type: \"Input\"` with input_param { shape { dim: N dim: C dim: H dim: W } })";
  return nullptr;
}

// Parses --resize: "H" or "H,W"; empty when the flag is not given.
std::vector<int> ResizeFromFlag() {
  std::vector<int> size;
  for (const std::string& part : SplitCommaList(FLAGS_resize)) {
    char* end = nullptr;
    const long value = std::strtol(part.c_str(), &end, 10);
    DOPPIO_ENSURE(end != part.c_str() && *end == '\0' && value > 0 && value < 100000)
        << "classify: --resize '" << FLAGS_resize << "' is not H or H,W in pixels";
    size.push_back(static_cast<int>(value));
  }
  DOPPIO_ENSURE(size.size() <= 2) << "classify: --resize '" << FLAGS_resize
                                  << "' has more than two sizes (give H or H,W)";
  if (size.size() == 1) size.push_back(size[0]);
  return size;
}

// The transform from an image of *resize_to pixels to the net's input: the mean, the scale
// and, when the image is larger than the input, the centre crop.
TransformationParameter ClassifyTransform(int height, int width, std::vector<int>* resize_to) {
  TransformationParameter transform;
  transform.set_scale(static_cast<float>(FLAGS_scale));
  *resize_to = ResizeFromFlag();
  DOPPIO_ENSURE(FLAGS_mean.empty() || FLAGS_mean_value.empty())
      << "classify: give --mean or --mean_value, not both";
  if (!FLAGS_mean.empty()) {
    BlobProto mean;
    ReadProtoFromBinaryFile(FLAGS_mean, &mean);
    const std::vector<int> shape = BlobProtoShape(mean);
    DOPPIO_ENSURE(shape.size() >= 3)
        << "classify: --mean file '" << FLAGS_mean << "' is not an image mean (shape has "
        << shape.size() << " axes)";
    const std::vector<int> mean_size = {shape[shape.size() - 2], shape[shape.size() - 1]};
    // The mean is subtracted before the crop, so the image takes the mean's size.
    DOPPIO_ENSURE(resize_to->empty() || *resize_to == mean_size)
        << "classify: --resize=" << FLAGS_resize << " differs from the size of the mean in '"
        << FLAGS_mean << "' (" << mean_size[0] << " x " << mean_size[1]
        << "); images are resized to the mean's size";
    *resize_to = mean_size;
    transform.set_mean_file(FLAGS_mean);
  }
  if (resize_to->empty()) *resize_to = {height, width};
  if ((*resize_to)[0] != height || (*resize_to)[1] != width) {
    DOPPIO_ENSURE((*resize_to)[0] >= height && (*resize_to)[1] >= width && height == width)
        << "classify: images resized to " << (*resize_to)[0] << " x " << (*resize_to)[1]
        << " (--resize or the mean's size) cannot be centre-cropped to the net's " << height
        << " x " << width << " input; the size must be the input's, or larger for a square input";
    transform.set_crop_size(static_cast<unsigned>(height));
  }
  for (const std::string& value : SplitCommaList(FLAGS_mean_value)) {
    char* end = nullptr;
    const float number = std::strtof(value.c_str(), &end);
    DOPPIO_ENSURE(end != value.c_str() && *end == '\0')
        << "classify: --mean_value '" << value << "' is not a number";
    transform.add_mean_value(number);
  }
  return transform;
}

int Classify() {
  DOPPIO_ENSURE(!FLAGS_model.empty())
      << "classify: --model is required (a deploy prototxt with an Input layer)";
  DOPPIO_ENSURE(!FLAGS_weights.empty()) << "classify: --weights is required (a .caffemodel)";
  DOPPIO_ENSURE(FLAGS_top_k > 0) << "classify: --top_k must be > 0, not " << FLAGS_top_k;
  const std::vector<std::string>& images = CommandArguments();
  DOPPIO_ENSURE(!images.empty()) << "classify: no image given (doppio classify --model=... "
                                    "--weights=... image.png [more images])";
  std::shared_ptr<GpuContext> gpu = GpuFromFlags();
  std::vector<std::string> labels;
  if (!FLAGS_labels.empty()) labels = ReadLabels(FLAGS_labels);

  NetParameter net_param = ReadNetParamsFromTextFile(FLAGS_model);
  net_param.mutable_state()->set_phase(TEST);
  Net<float> net(net_param, 1701, gpu, CpuOptionsFromFlags());
  LoadNetWeights(&net, FLAGS_weights);
  Blob<float>* input = FindImageInput(net, FLAGS_model);
  DOPPIO_ENSURE(input->num_axes() == 4 && (input->shape(1) == 1 || input->shape(1) == 3))
      << "classify: the Input of " << FLAGS_model
      << " must be N x C x H x W images with C = 1 (gray) or 3 (BGR), not "
      << input->shape_string();
  const int channels = input->shape(1), height = input->shape(2), width = input->shape(3);
  std::vector<int> resize_to;
  const TransformationParameter transform = ClassifyTransform(height, width, &resize_to);
  DataTransformer<float> transformer(transform, TEST, "classify");

  // All images in one batch.
  input->Reshape({static_cast<int>(images.size()), channels, height, width});
  net.Reshape();
  const std::vector<int> expected = {channels, height, width};
  for (std::size_t i = 0; i < images.size(); ++i) {
    DOPPIO_ENSURE(std::filesystem::is_regular_file(images[i]))
        << "classify: image '" << images[i] << "' does not exist";
    const cv::Mat image = ReadImage(images[i], resize_to[0], resize_to[1], channels == 3);
    DOPPIO_ENSURE(!image.empty()) << "classify: cannot read image '" << images[i]
                                  << "' (missing, or not an image)";
    transformer.Transform(image, DataTransformer<float>::Draw(),
                          input->mutable_cpu_data() + i * input->count(1),
                          "image '" + images[i] + "'", &expected);
  }
  net.Forward();

  Blob<float>* output = nullptr;
  if (FLAGS_output.empty()) {
    DOPPIO_ENSURE(!net.output_blobs().empty()) << "classify: " << FLAGS_model << " has no output";
    output = net.output_blobs().back();
  } else {
    DOPPIO_ENSURE(net.has_blob(FLAGS_output))
        << "classify: " << FLAGS_model << " has no blob named '" << FLAGS_output << "'";
    output = net.blob_by_name(FLAGS_output).get();
  }
  DOPPIO_ENSURE(output->num_axes() >= 1 && output->shape(0) == static_cast<int>(images.size()))
      << "classify: the output " << output->shape_string() << " has no row per image";
  const int classes = output->count(1);
  DOPPIO_ENSURE(labels.empty() || static_cast<int>(labels.size()) == classes)
      << "classify: --labels file '" << FLAGS_labels << "' has " << labels.size()
      << " lines but the net has " << classes << " classes";
  const int top_k = std::min(FLAGS_top_k, classes);
  for (std::size_t i = 0; i < images.size(); ++i) {
    const float* scores = output->cpu_data() + i * classes;
    std::vector<int> order(classes);
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + top_k, order.end(),
                      [scores](int a, int b) { return scores[a] > scores[b]; });
    std::printf("---------- Prediction for %s ----------\n", images[i].c_str());
    for (int k = 0; k < top_k; ++k) {
      const int c = order[k];
      const std::string name = labels.empty() ? std::to_string(c) : labels[c];
      std::printf("%.4f - \"%s\"\n", scores[c], name.c_str());
    }
  }
  std::fflush(stdout);
  return 0;
}

}  // namespace
}  // namespace doppio

DOPPIO_REGISTER_COMMAND_WITH_ARGUMENTS(classify,
                                       "print the top classes of images under a trained model",
                                       doppio::Classify);
