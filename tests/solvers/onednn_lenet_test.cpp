// LeNet trained on the oneDNN engine ends where the CAFFE engine ends: 50 iterations of
// models/lenet with its solver (SGD, momentum, weight decay) on random MNIST-shaped batches,
// every learnable blob within 1e-4 of CAFFE's, relative to the blob's norm. And weights that
// the CAFFE engine trained, written as a .caffemodel, classify a test set the same through
// either engine.
#ifdef DOPPIO_WITH_ONEDNN

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>

#include "doppio/util/io.hpp"
#include "engine_override.hpp"
#include "solver_test_util.hpp"
#include "synthetic_inputs.hpp"
#include "test_util.hpp"

namespace doppio {
namespace {

constexpr int kClasses = 10;
constexpr int kPixels = 28 * 28;

// The published LeNet, its data layers replaced by inputs of `batch` images that the caller
// fills, every layer asking for `engine`.
NetParameter LeNet(const std::string& engine, int batch) {
  const NetParameter net =
      ReadNetParamsFromTextFile(SourceDir() + "/models/lenet/train_val.prototxt");
  return WithEngine(WithSyntheticInputs(net, batch, {1, 28, 28}), engine);
}

// Fills a batch of MNIST-like inputs: pixels in [0, 1), ten classes. Without prototypes the
// images are noise (nothing to learn); with them, an image is its class's prototype blended
// with noise, which LeNet learns to tell apart within a hundred iterations.
void FillBatch(Net<float>& net, Rng& rng, const std::vector<std::vector<float>>& prototypes) {
  Blob<float>& data = *net.blob_by_name("data");
  Blob<float>& label = *net.blob_by_name("label");
  for (int n = 0; n < label.count(); ++n) {
    const int cls = static_cast<int>(rng.Below(kClasses));
    label.mutable_cpu_data()[n] = static_cast<float>(cls);
    float* image = data.mutable_cpu_data() + static_cast<std::size_t>(n) * kPixels;
    for (int i = 0; i < kPixels; ++i) {
      const float noise = static_cast<float>(rng.Uniform(0, 1));
      image[i] = prototypes.empty() ? noise : 0.5f * prototypes[cls][i] + 0.5f * noise;
    }
  }
}

// Trains LeNet with its published solver (SGD, momentum, weight decay) at `base_lr`; each
// iteration draws a fresh batch, the same draws for every run.
std::unique_ptr<Solver<float>> TrainLeNet(const std::string& engine, int iterations, float base_lr,
                                          const std::vector<std::vector<float>>& prototypes) {
  SolverParameter param =
      ReadSolverParamsFromTextFile(SourceDir() + "/models/lenet/solver.prototxt");
  param.clear_net();
  *param.mutable_net_param() = LeNet(engine, 16);
  param.clear_test_iter();
  param.set_test_interval(0);
  param.set_snapshot(0);
  param.set_snapshot_after_train(false);
  param.set_random_seed(1);
  param.set_display(0);
  param.set_base_lr(base_lr);
  auto solver = SolverRegistry<float>::CreateSolver(param);
  Net<float>& train = *solver->net();
  for (const auto& layer : train.layers()) {
    if (std::string(layer->type()) == "Convolution") EXPECT_EQ(layer->engine(), engine);
  }
  Rng rng(12);
  solver->add_callbacks({[&] { FillBatch(train, rng, prototypes); }, nullptr});
  solver->Step(iterations);
  return solver;
}

std::vector<std::vector<float>> LearnableBlobs(const Net<float>& net) {
  std::vector<std::vector<float>> blobs;
  for (const auto* blob : net.learnable_params()) {
    blobs.emplace_back(blob->cpu_data(), blob->cpu_data() + blob->count());
  }
  return blobs;
}

// What the TEST net on one engine makes of the same 500 images: each image's predicted class
// (the largest of ip2's outputs), the gap between its two largest outputs, and the accuracy
// layer's mean.
struct Classification {
  std::vector<int> predicted;
  std::vector<float> margin;
  double accuracy = 0;
};

Classification Classify(const std::string& engine, const std::string& weights_file,
                        const std::vector<std::vector<float>>& prototypes) {
  constexpr int kBatch = 100;
  constexpr int kBatches = 5;
  NetParameter param = LeNet(engine, kBatch);
  param.mutable_state()->set_phase(TEST);
  Net<float> net(param);
  for (const auto& layer : net.layers()) {
    if (std::string(layer->type()) == "Convolution") EXPECT_EQ(layer->engine(), engine);
  }
  net.CopyTrainedLayersFromFile(weights_file);
  Rng rng(99);
  Classification result;
  for (int b = 0; b < kBatches; ++b) {
    FillBatch(net, rng, prototypes);
    net.Forward();
    result.accuracy += net.blob_by_name("accuracy")->cpu_data()[0] / kBatches;
    const Blob<float>& scores = *net.blob_by_name("ip2");
    for (int n = 0; n < kBatch; ++n) {
      const float* row = scores.cpu_data() + n * kClasses;
      const int best = static_cast<int>(std::max_element(row, row + kClasses) - row);
      float second = -std::numeric_limits<float>::infinity();
      for (int c = 0; c < kClasses; ++c) {
        if (c != best) second = std::max(second, row[c]);
      }
      result.predicted.push_back(best);
      result.margin.push_back(row[best] - second);
    }
  }
  return result;
}

TEST(OnednnLeNetTest, FiftyIterationsEndWithinOneInTenThousandOfCaffe) {
  // At the published base_lr (0.01) on random batches, training is chaotic: a 1e-6
  // relative change of the inputs moves the CAFFE engine's own weights by 1e-2 within
  // 50 iterations, so no two summation orders could agree to 1e-4. At 0.001 it is not.
  const auto caffe = LearnableBlobs(*TrainLeNet("CAFFE", 50, 0.001f, {})->net());
  const auto onednn = LearnableBlobs(*TrainLeNet("ONEDNN", 50, 0.001f, {})->net());
  ASSERT_EQ(caffe.size(), onednn.size());
  for (std::size_t i = 0; i < caffe.size(); ++i) {
    double diff = 0, norm = 0;
    for (std::size_t j = 0; j < caffe[i].size(); ++j) {
      diff += std::pow(double(onednn[i][j]) - caffe[i][j], 2);
      norm += std::pow(double(caffe[i][j]), 2);
    }
    EXPECT_LE(std::sqrt(diff), 1e-4 * std::sqrt(norm)) << "learnable blob " << i;
  }
}

TEST(OnednnLeNetTest, CaffeTrainedWeightsClassifyTheSameThroughEitherEngine) {
  Rng rng(5);
  std::vector<std::vector<float>> prototypes(kClasses, std::vector<float>(kPixels));
  for (auto& prototype : prototypes) {
    for (float& pixel : prototype) pixel = static_cast<float>(rng.Uniform(0, 1));
  }
  TempDir dir;
  const std::string weights = dir.path() + "/lenet_caffe.caffemodel";
  {
    const auto solver = TrainLeNet("CAFFE", 100, 0.01f, prototypes);
    NetParameter trained;
    solver->net()->ToProto(&trained);
    WriteProtoToBinaryFile(trained, weights);
  }
  const Classification caffe = Classify("CAFFE", weights, prototypes);
  const Classification onednn = Classify("ONEDNN", weights, prototypes);
  // Trained, not guessing: otherwise agreeing on the accuracy would say little.
  EXPECT_GT(caffe.accuracy, 0.9);
  ASSERT_EQ(caffe.predicted.size(), onednn.predicted.size());
  // The engines' sums differ by rounding, about 1e-6 of the outputs: only a near tie may flip,
  // and only a flip may move the accuracy (by one image in 500 each).
  int near_ties = 0;
  for (std::size_t i = 0; i < caffe.predicted.size(); ++i) {
    if (caffe.margin[i] > 1e-4f) {
      EXPECT_EQ(onednn.predicted[i], caffe.predicted[i]) << "image " << i;
    } else {
      ++near_ties;
    }
  }
  EXPECT_NEAR(onednn.accuracy, caffe.accuracy, near_ties / 500.0 + 1e-12);
}

}  // namespace
}  // namespace doppio

#endif  // DOPPIO_WITH_ONEDNN
