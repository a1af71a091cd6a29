// models/lenet/train_val.prototxt trained from LMDBs through the Data layer, with a plain
// momentum SGD written here (the solvers live elsewhere): on a generated data set always,
// and on data/mnist's LMDBs when data/mnist/get_mnist.sh has built them.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <vector>

#include "data_test_helpers.hpp"
#include "doppio/core/net.hpp"
#include "doppio/util/io.hpp"
#include "doppio/util/math_functions.hpp"
#include "test_util.hpp"

namespace doppio {
namespace {

NetParameter LeNet(Phase phase, const std::string& train_source, const std::string& test_source) {
  NetParameter param = ReadNetParamsFromTextFile(std::string(DOPPIO_SOURCE_DIR) +
                                                 "/models/lenet/train_val.prototxt");
  param.mutable_state()->set_phase(phase);
  for (auto& layer : *param.mutable_layer()) {
    if (layer.type() != "Data") continue;
    const bool train = layer.include_size() > 0 && layer.include(0).phase() == TRAIN;
    layer.mutable_data_param()->set_source(train ? train_source : test_source);
  }
  return param;
}

// Momentum SGD on the parameter arena (lr_mult and weight decay left out).
void Train(Net<float>* net, int iterations, float lr, std::vector<float>* losses) {
  std::vector<float> history(net->arena_count(), 0.f);
  for (int it = 0; it < iterations; ++it) {
    net->ClearParamDiffs();
    losses->push_back(net->ForwardBackward());
    float* diff = net->mutable_arena_diff();
    for (std::size_t i = 0; i < history.size(); ++i) {
      history[i] = 0.9f * history[i] + lr * diff[i];
      diff[i] = history[i];
    }
    net->Update();
  }
}

float Accuracy(Net<float>* net, int batches) {
  double sum = 0;
  for (int b = 0; b < batches; ++b) {
    net->Forward();
    sum += net->blob_by_name("accuracy")->cpu_data()[0];
  }
  return static_cast<float>(sum / batches);
}

TEST(TrainLeNetTest, LossFallsOnAGeneratedDataSet) {
  // Class k: a bright bar on rows 2k+4 .. 2k+5 over faint noise.
  TempDir dir;
  std::vector<Datum> datums;
  for (int i = 0; i < 200; ++i) {
    const int k = i % 10;
    datums.push_back(testing_data::MakeDatum(1, 28, 28, k, [&](int, int h, int w) {
      const int noise = (i * 131 + h * 17 + w * 29) % 40;
      return (h == 2 * k + 4 || h == 2 * k + 5) && w > 3 && w < 24 ? 200 + noise / 2 : noise;
    }));
  }
  testing_data::WriteDatumLmdb(dir.path() + "/train", datums);
  Net<float> net(LeNet(TRAIN, dir.path() + "/train", dir.path() + "/train"), 7);
  std::vector<float> losses;
  Train(&net, 40, 0.01f, &losses);
  EXPECT_NEAR(losses.front(), std::log(10.f), 0.5f);
  EXPECT_LT(losses.back(), 0.3f * losses.front())
      << "losses " << losses.front() << " -> " << losses.back();
  Net<float> test(LeNet(TEST, dir.path() + "/train", dir.path() + "/train"), 7);
  test.ShareTrainedLayersWith(net);
  EXPECT_GT(Accuracy(&test, 2), 0.9f);
}

TEST(TrainLeNetTest, LearnsMnistFromGetMnistLmdbs) {
  const std::string folder = std::string(DOPPIO_SOURCE_DIR) + "/data/mnist";
  if (!std::filesystem::exists(folder + "/mnist_train_lmdb/data.mdb") ||
      !std::filesystem::exists(folder + "/mnist_test_lmdb/data.mdb")) {
    GTEST_SKIP() << "run data/mnist/get_mnist.sh to build the MNIST LMDBs";
  }
  Net<float> net(LeNet(TRAIN, folder + "/mnist_train_lmdb", folder + "/mnist_test_lmdb"), 1);
  std::vector<float> losses;
  Train(&net, 200, 0.01f, &losses);
  Net<float> test(LeNet(TEST, folder + "/mnist_train_lmdb", folder + "/mnist_test_lmdb"), 1);
  test.ShareTrainedLayersWith(net);
  const float accuracy = Accuracy(&test, 20);
  std::printf("LeNet on data/mnist: loss %.3f -> %.3f after 200 iterations, test accuracy %.4f\n",
              losses.front(), losses.back(), accuracy);
  EXPECT_GT(accuracy, 0.9f);
}

TEST(TrainLeNetTest, LearnsFashionMnistFromItsLmdbs) {
  const std::string folder = std::string(DOPPIO_SOURCE_DIR) + "/data/fashion_mnist";
  if (!std::filesystem::exists(folder + "/fashion_mnist_train_lmdb/data.mdb") ||
      !std::filesystem::exists(folder + "/fashion_mnist_test_lmdb/data.mdb")) {
    GTEST_SKIP() << "run data/fashion_mnist/get_fashion_mnist.sh to build the LMDBs";
  }
  Net<float> net(
      LeNet(TRAIN, folder + "/fashion_mnist_train_lmdb", folder + "/fashion_mnist_test_lmdb"), 1);
  std::vector<float> losses;
  Train(&net, 200, 0.01f, &losses);
  Net<float> test(
      LeNet(TEST, folder + "/fashion_mnist_train_lmdb", folder + "/fashion_mnist_test_lmdb"), 1);
  test.ShareTrainedLayersWith(net);
  const float accuracy = Accuracy(&test, 20);
  std::printf(
      "LeNet on data/fashion_mnist: loss %.3f -> %.3f after 200 iterations, test accuracy %.4f\n",
      losses.front(), losses.back(), accuracy);
  EXPECT_GT(accuracy, 0.7f);
}

}  // namespace
}  // namespace doppio
