// Data-parallel training with every random part of a published ImageNet net on: AlexNet's
// train_val.prototxt as shipped (random 227 x 227 crops, mirrors, two Dropout layers) on a
// JPEG LMDB made here the way a user makes one (convert_imageset --encoded, then
// compute_image_mean). N ranks of batch B must train the weights one process of batch N*B
// trains: each record's crop and mirror and each sample's dropout mask are keyed by the
// sample's position in the global stream, not drawn per rank.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <vector>

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>

#include "doppio/data/convert.hpp"
#include "doppio/parallel/distributed_solver.hpp"
#include "doppio/solvers/solver_registry.hpp"
#include "doppio/util/io.hpp"
#include "mpi_test_util.hpp"
#include "test_util.hpp"

namespace doppio {
namespace {

using mpi_test::World;

constexpr int kImages = 24;
constexpr int kBatch = 4;  // per rank
constexpr int kIterations = 2;

// A 240 x 240 colour picture per record: a gradient whose direction depends on the label,
// with fine texture, so that crops and mirrors change what the net sees.
cv::Mat Picture(int i) {
  cv::Mat image(240, 240, CV_8UC3);
  for (int h = 0; h < image.rows; ++h) {
    for (int w = 0; w < image.cols; ++w) {
      const int a = (i % 2 == 0 ? h : w) + (h * w + 7 * i) % 23;
      image.at<cv::Vec3b>(h, w) = cv::Vec3b(a % 256, (a + 40 * i) % 256, (3 * w + h) % 256);
    }
  }
  return image;
}

// AlexNet as shipped, reading `source` with `mean_file`, batch `batch`, its TRAIN net only.
NetParameter AlexNet(const std::string& source, const std::string& mean_file, int batch) {
  NetParameter net = ReadNetParamsFromTextFile(SourceDir() + "/models/alexnet/train_val.prototxt");
  NetParameter train;
  train.set_name(net.name());
  for (const LayerParameter& layer : net.layer()) {
    const bool test_only = layer.include_size() == 1 && layer.include(0).phase() == TEST;
    if (test_only) continue;
    LayerParameter* copy = train.add_layer();
    *copy = layer;
    if (copy->type() == "Data") {
      copy->mutable_transform_param()->set_mean_file(mean_file);
      copy->mutable_data_param()->set_source(source);
      copy->mutable_data_param()->set_batch_size(batch);
    }
  }
  return train;
}

SolverParameter Solver(const NetParameter& net) {
  SolverParameter param = ParseText<SolverParameter>(
      "type: 'SGD' base_lr: 0.001 momentum: 0.9 weight_decay: 0.0005 lr_policy: 'fixed' "
      "display: 0 random_seed: 11 snapshot_after_train: false max_iter: " +
      std::to_string(kIterations));
  *param.mutable_net_param() = net;
  return param;
}

using Params = std::vector<std::vector<float>>;

Params Copy(const Net<float>& net) {
  Params params;
  for (const Blob<float>* blob : net.learnable_params()) {
    params.emplace_back(blob->cpu_data(), blob->cpu_data() + blob->count());
  }
  return params;
}

// The largest difference of a parameter, relative to the largest magnitude in its blob;
// *blob (when given) is the learnable blob where it is.
double MaxRelativeDifference(const Params& a, const Params& b, int* blob = nullptr) {
  double worst = 0;
  EXPECT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) {
    double scale = 0, diff = 0;
    for (std::size_t k = 0; k < b[i].size(); ++k) {
      scale = std::max(scale, std::fabs(double(b[i][k])));
      diff = std::max(diff, std::fabs(double(a[i][k]) - double(b[i][k])));
    }
    if (scale > 0 && diff / scale > worst) {
      worst = diff / scale;
      if (blob != nullptr) *blob = static_cast<int>(i);
    }
  }
  return worst;
}

class AugmentationTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new mpi_test::SharedTempDir();
    if (World()->rank() == 0) {
      std::ofstream list(Dir() + "/list.txt");
      for (int i = 0; i < kImages; ++i) {
        const std::string name = "img" + std::to_string(i) + ".jpg";
        ASSERT_TRUE(cv::imwrite(Dir() + "/" + name, Picture(i)));
        list << name << " " << i % 2 << "\n";
      }
      list.close();
      ImageSetOptions options;
      options.encoded = true;
      ConvertImageSet(Dir() + "/", Dir() + "/list.txt", Dir() + "/train_lmdb", options);
      ComputeImageMean(Dir() + "/train_lmdb", Dir() + "/mean.binaryproto");
    }
    World()->Barrier("JPEG LMDB written");
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  static std::string Dir() { return dir_->path(); }
  static mpi_test::SharedTempDir* dir_;
};
mpi_test::SharedTempDir* AugmentationTest::dir_ = nullptr;

TEST_F(AugmentationTest, AlexNetWithCropMirrorAndDropoutTrainsAlikeOnEveryRankCount) {
  const int ranks = World()->size();
  const std::string source = Dir() + "/train_lmdb", mean = Dir() + "/mean.binaryproto";
  ParallelOptions options;
  DistributedSolver<float> trainer(Solver(AlexNet(source, mean, kBatch)), World(), options);
  trainer.Solve();
  auto single = SolverRegistry<float>::CreateSolver(Solver(AlexNet(source, mean, ranks * kBatch)));
  const Params initial = Copy(*single->net());
  single->Solve();

  const Params expected = Copy(*single->net());
  const double moved = MaxRelativeDifference(initial, expected);
  int worst_blob = -1;
  const double apart = MaxRelativeDifference(Copy(*trainer.solver()->net()), expected, &worst_blob);
  std::cout << "rank " << World()->rank() << ": " << ranks << " ranks of batch " << kBatch
            << " vs 1 process of batch " << ranks * kBatch << " after " << kIterations
            << " iterations: max relative weight difference " << apart << " (learnable blob "
            << worst_blob << " of " << expected.size() << ", " << expected[worst_blob].size()
            << " values; training moved the weights by " << moved << ")" << std::endl;
  EXPECT_GT(moved, 1e-3) << "training did not move the weights: the comparison means nothing";
  // The sums of a batch split over the ranks round differently: 2.6e-4 after 2 iterations
  // on the development machine with the CAFFE engine. On ONEDNN, the CPU's default, 1.2e-3,
  // on conv1's bias: it starts at 0, so after 2 iterations it holds little but its gradient,
  // a sum of terms of either sign over 8 x 55 x 55 positions that oneDNN orders by batch.
  // Per-rank draws (before issue 22) gave differences of order 1.
  EXPECT_LT(apart, 1e-2);
}

}  // namespace
}  // namespace doppio
