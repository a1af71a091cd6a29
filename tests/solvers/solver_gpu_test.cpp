// Every solver type trains the same weights on the GPU as on the CPU, and a GPU snapshot
// resumes exactly. Skipped without a device.
#include <gtest/gtest.h>

#include "gpu_test_util.hpp"
#include "solver_test_util.hpp"

namespace doppio {
namespace {

using solver_test::FillIterationData;
using solver_test::LeastSquaresSolver;
using solver_test::Weights;

template <typename Dtype>
std::unique_ptr<Solver<Dtype>> MakeSolver(const SolverParameter& param,
                                          std::shared_ptr<GpuContext> gpu) {
  auto solver = SolverRegistry<Dtype>::CreateSolver(param, std::move(gpu));
  Solver<Dtype>* raw = solver.get();
  raw->add_callbacks({[raw] { FillIterationData(*raw->net(), raw->iter()); }, nullptr});
  return solver;
}

template <typename Dtype>
class SolverGpuTest : public ::testing::Test {
 protected:
  void SetUp() override { DOPPIO_REQUIRE_GPU(); }

  void ExpectSameTraining(const std::string& extra) {
    SCOPED_TRACE(extra);
    const SolverParameter param = LeastSquaresSolver(extra);
    auto cpu = MakeSolver<Dtype>(param, nullptr);
    auto gpu = MakeSolver<Dtype>(param, TestGpu());
    EXPECT_EQ(gpu->net()->mode(), Mode::GPU);
    for (const auto& net : gpu->test_nets()) EXPECT_EQ(net->mode(), Mode::GPU);
    cpu->Step(6);
    gpu->Step(6);
    const std::vector<Dtype> a = Weights(*cpu), b = Weights(*gpu);
    ASSERT_EQ(a.size(), b.size());
    ExpectClose(a.data(), b.data(), static_cast<int>(a.size()), 10 * GpuTolerance<Dtype>(),
                "weights");
  }
};
TYPED_TEST_SUITE(SolverGpuTest, TestDtypes);

TYPED_TEST(SolverGpuTest, SGD) {
  this->ExpectSameTraining("type: 'SGD' momentum: 0.9 weight_decay: 0.01");
}
TYPED_TEST(SolverGpuTest, SGDWithL1ClipAndIterSize) {
  this->ExpectSameTraining(
      "type: 'SGD' momentum: 0.5 weight_decay: 0.02 regularization_type: 'L1' "
      "clip_gradients: 0.5 iter_size: 2");
}
TYPED_TEST(SolverGpuTest, Nesterov) {
  this->ExpectSameTraining("type: 'Nesterov' momentum: 0.9 weight_decay: 0.01");
}
TYPED_TEST(SolverGpuTest, SGDWithLarsScale) {
  this->ExpectSameTraining(
      "type: 'SGD' momentum: 0.9 weight_decay: 0.01 larc: true larc_policy: 'scale' "
      "larc_eta: 0.5 larc_include_bias_bn: true");
}
TYPED_TEST(SolverGpuTest, NesterovWithLarcClip) {
  this->ExpectSameTraining(
      "type: 'Nesterov' momentum: 0.9 weight_decay: 0.01 larc: true larc_policy: 'clip' "
      "larc_eta: 0.02");
}
TYPED_TEST(SolverGpuTest, AdaGrad) { this->ExpectSameTraining("type: 'AdaGrad' base_lr: 0.1"); }
TYPED_TEST(SolverGpuTest, RMSProp) {
  this->ExpectSameTraining("type: 'RMSProp' rms_decay: 0.95 base_lr: 0.01");
}
TYPED_TEST(SolverGpuTest, AdaDelta) {
  this->ExpectSameTraining("type: 'AdaDelta' momentum: 0.95 delta: 1e-6 base_lr: 1");
}
TYPED_TEST(SolverGpuTest, Adam) {
  this->ExpectSameTraining("type: 'Adam' momentum: 0.9 momentum2: 0.999 base_lr: 0.01");
}

TYPED_TEST(SolverGpuTest, SnapshotOnTheGpuResumesExactly) {
  using Dtype = TypeParam;
  TempDir dir;
  SolverParameter param =
      LeastSquaresSolver("type: 'Adam' base_lr: 0.01 snapshot_prefix: '" + dir.path() + "/s'");
  auto straight = MakeSolver<Dtype>(param, TestGpu());
  straight->Step(8);
  auto first = MakeSolver<Dtype>(param, TestGpu());
  first->Step(4);
  first->Snapshot();
  auto resumed = MakeSolver<Dtype>(param, TestGpu());
  resumed->Restore(first->SnapshotFilename(".solverstate"));
  resumed->Step(4);
  const std::vector<Dtype> a = Weights(*straight), b = Weights(*resumed);
  ExpectClose(a.data(), b.data(), static_cast<int>(a.size()), 0, "weights");
}

}  // namespace
}  // namespace doppio
