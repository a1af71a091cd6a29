// models/lenet/train_val.prototxt trained from LMDBs through the Data layer, with a plain
// momentum SGD written here (the solvers live elsewhere): on a generated data set always,
// and on data/mnist's LMDBs when data/mnist/get_mnist.sh has built them.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <vector>

#include "data_test_helpers.hpp"
#include "doppio/core/net.hpp"
#include "doppio/data/convert.hpp"
#include "doppio/util/io.hpp"
#include "doppio/util/math_functions.hpp"
#include "test_util.hpp"

namespace doppio {
namespace {

NetParameter LeNet(Phase phase, const std::string& train_source, const std::string& test_source) {
  NetParameter param = ReadNetParamsFromTextFile(SourceDir() + "/models/lenet/train_val.prototxt");
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
  const std::string folder = SourceDir() + "/data/mnist";
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
  const std::string folder = SourceDir() + "/data/fashion_mnist";
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

// models/cifar10_quick on LMDBs and a mean file made by the converters from generated CIFAR-10
// batches: the mean_file path through the Data layer.
TEST(TrainLeNetTest, Cifar10QuickRunsOnConvertedDataWithItsMean) {
  TempDir dir;
  const std::string bin = dir.path() + "/bin";
  std::filesystem::create_directory(bin);
  for (const std::string name : {"data_batch_1", "data_batch_2", "data_batch_3", "data_batch_4",
                                 "data_batch_5", "test_batch"}) {
    std::string bytes;
    for (int i = 0; i < 10; ++i) {
      bytes.push_back(static_cast<char>(i));
      for (int p = 0; p < 3072; ++p) bytes.push_back(static_cast<char>((p * (i + 1)) % 256));
    }
    std::ofstream(bin + "/" + name + ".bin", std::ios::binary) << bytes;
  }
  ConvertCifar10(bin, dir.path());
  ComputeImageMean(dir.path() + "/cifar10_train_lmdb", dir.path() + "/mean.binaryproto");
  NetParameter param =
      ReadNetParamsFromTextFile(SourceDir() + "/models/cifar10_quick/train_val.prototxt");
  param.mutable_state()->set_phase(TRAIN);
  for (auto& layer : *param.mutable_layer()) {
    if (layer.type() != "Data") continue;
    layer.mutable_data_param()->set_source(dir.path() + "/cifar10_train_lmdb");
    layer.mutable_data_param()->set_batch_size(8);
    ASSERT_TRUE(layer.transform_param().has_mean_file());
    layer.mutable_transform_param()->set_mean_file(dir.path() + "/mean.binaryproto");
  }
  Net<float> net(param, 3);
  EXPECT_EQ(net.blob_by_name("data")->shape(), (std::vector<int>{8, 3, 32, 32}));
  EXPECT_TRUE(std::isfinite(net.ForwardBackward()));
  // Record i of every file has pixel p = p (i + 1) mod 256, so at pixel 1 the mean over the
  // 50 training records is 5.5 and the first record (i = 0) gives 1 - 5.5.
  EXPECT_FLOAT_EQ(net.blob_by_name("data")->cpu_data()[1], -4.5f);
  EXPECT_TRUE(std::isfinite(net.ForwardBackward()));
}

}  // namespace
}  // namespace doppio
