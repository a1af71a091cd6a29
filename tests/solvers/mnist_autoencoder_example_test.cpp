// examples/mnist/mnist_autoencoder*.prototxt as shipped (Caffe's autoencoder, with its two
// layers named "loss"), trained a few iterations by each of its four solvers on small
// generated MNIST-shaped LMDBs, laid out where the files look for them.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "../data/data_test_helpers.hpp"
#include "doppio/solvers/solver_registry.hpp"
#include "doppio/util/io.hpp"
#include "test_util.hpp"

namespace doppio {
namespace {

namespace fs = std::filesystem;

constexpr int kIterations = 10;

// Runs in `path` while alive: the example's files name paths relative to the repository root.
class WorkingDirectory {
 public:
  explicit WorkingDirectory(const std::string& path) : previous_(fs::current_path()) {
    fs::current_path(path);
  }
  ~WorkingDirectory() { fs::current_path(previous_); }

 private:
  fs::path previous_;
};

// 28 x 28 digits, class k a bright bar on rows 2k+4 .. 2k+5 over faint noise.
std::vector<Datum> Digits(int count, int seed) {
  std::vector<Datum> datums;
  for (int i = 0; i < count; ++i) {
    const int k = i % 10;
    datums.push_back(testing_data::MakeDatum(1, 28, 28, k, [&](int, int h, int w) {
      const int noise = (i * 131 + h * 17 + w * 29 + seed) % 40;
      return (h == 2 * k + 4 || h == 2 * k + 5) && w > 3 && w < 24 ? 200 + noise / 2 : noise;
    }));
  }
  return datums;
}

class MnistAutoencoderExampleTest : public ::testing::TestWithParam<std::string> {
 protected:
  static void SetUpTestSuite() {
    root_ = new TempDir();
    const fs::path examples = fs::path(root_->path()) / "examples" / "mnist";
    const fs::path data = fs::path(root_->path()) / "data" / "mnist";
    fs::create_directories(examples);
    fs::create_directories(data);
    for (const std::string file :
         {"mnist_autoencoder.prototxt", "mnist_autoencoder_solver.prototxt",
          "mnist_autoencoder_solver_adadelta.prototxt", "mnist_autoencoder_solver_adagrad.prototxt",
          "mnist_autoencoder_solver_nesterov.prototxt"}) {
      fs::copy_file(fs::path(SourceDir()) / "examples" / "mnist" / file, examples / file);
    }
    // Two batches of 100 to train on, one to test on.
    testing_data::WriteDatumLmdb((data / "mnist_train_lmdb").string(), Digits(200, 0));
    testing_data::WriteDatumLmdb((data / "mnist_test_lmdb").string(), Digits(100, 7));
  }
  static void TearDownTestSuite() {
    delete root_;
    root_ = nullptr;
  }
  static TempDir* root_;
};

TempDir* MnistAutoencoderExampleTest::root_ = nullptr;

TEST_P(MnistAutoencoderExampleTest, LossIsFiniteAndFalls) {
  WorkingDirectory in_root(root_->path());
  SolverParameter param = ReadSolverParamsFromTextFile("examples/mnist/" + GetParam());
  // The shipped schedule, cut short: the test nets score the whole generated sets before and
  // after kIterations iterations, and nothing is written.
  ASSERT_EQ(param.test_iter_size(), 2);
  param.set_test_iter(0, 2);
  param.set_test_iter(1, 1);
  param.set_test_interval(kIterations);
  param.set_max_iter(kIterations);
  param.set_display(1);
  param.set_snapshot(0);
  param.set_snapshot_after_train(false);
  param.set_random_seed(1);
  std::unique_ptr<Solver<float>> solver = SolverRegistry<float>::CreateSolver(param);
  ASSERT_EQ(solver->test_nets().size(), 2u);

  // Per test net, its mean outputs at each test: cross_entropy_loss, l2_error, then the loss.
  std::vector<std::vector<std::vector<double>>> scores(2);
  SolverCallbacks callbacks;
  callbacks.on_test_scores = [&scores](int test_net_id, std::vector<double>* means) {
    scores[test_net_id].push_back(*means);
  };
  solver->add_callbacks(callbacks);
  solver->Solve();

  EXPECT_EQ(solver->iter(), kIterations);
  EXPECT_TRUE(std::isfinite(solver->smoothed_loss())) << solver->smoothed_loss();
  for (int net = 0; net < 2; ++net) {
    SCOPED_TRACE("test net #" + std::to_string(net));
    ASSERT_EQ(scores[net].size(), 2u);
    for (const auto& means : scores[net]) {
      ASSERT_EQ(means.size(), 3u);
      for (double value : means) EXPECT_TRUE(std::isfinite(value)) << value;
      // The second layer named "loss" only reports (loss_weight 0): the loss is the first's.
      EXPECT_NEAR(means[2], means[0], 1e-4 * std::abs(means[0]));
    }
    // Measured: about 1000 -> 280..350 (cross-entropy) and 120 -> 11..25 (l2) by every solver.
    const std::vector<double>& before = scores[net].front();
    const std::vector<double>& after = scores[net].back();
    EXPECT_LT(after[0], 0.8 * before[0]) << "cross-entropy " << before[0] << " -> " << after[0];
    EXPECT_LT(after[1], 0.8 * before[1]) << "l2 error " << before[1] << " -> " << after[1];
  }
}

INSTANTIATE_TEST_SUITE_P(Solvers, MnistAutoencoderExampleTest,
                         ::testing::Values("mnist_autoencoder_solver.prototxt",
                                           "mnist_autoencoder_solver_adadelta.prototxt",
                                           "mnist_autoencoder_solver_adagrad.prototxt",
                                           "mnist_autoencoder_solver_nesterov.prototxt"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           const std::string& file = info.param;
                           const std::size_t start = file.find("solver") + 6;
                           const std::string variant = file.substr(start, file.find('.') - start);
                           return variant.empty() ? std::string("SGD") : variant.substr(1);
                         });

}  // namespace
}  // namespace doppio
