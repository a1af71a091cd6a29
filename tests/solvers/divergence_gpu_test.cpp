// Divergence on the GPU: the update's own check (gpu_axpy_finite) stops training, and the scan
// that names the place reads the device's blobs. Skipped without a device.
#include <gtest/gtest.h>

#include <limits>

#include "gpu_test_util.hpp"
#include "solver_test_util.hpp"

namespace doppio {
namespace {

using solver_test::FillIterationData;
using solver_test::LeastSquaresSolver;
using solver_test::Weights;

template <typename Dtype>
class DivergenceGpuTest : public ::testing::Test {
 protected:
  void SetUp() override { DOPPIO_REQUIRE_GPU(); }
  std::unique_ptr<Solver<Dtype>> MakeSolver(int nan_at = -1) {
    auto solver =
        SolverRegistry<Dtype>::CreateSolver(LeastSquaresSolver("momentum: 0.9"), TestGpu());
    Solver<Dtype>* raw = solver.get();
    raw->add_callbacks(
        {[raw, nan_at] { FillIterationData(*raw->net(), raw->iter(), nan_at); }, nullptr});
    return solver;
  }
};
TYPED_TEST_SUITE(DivergenceGpuTest, TestDtypes);

TYPED_TEST(DivergenceGpuTest, APoisonedGradientStopsTrainingNamingIt) {
  auto solver = this->MakeSolver();
  Net<TypeParam>* net = solver->net().get();
  Solver<TypeParam>* raw = solver.get();
  const int ip2 = 3;
  ASSERT_EQ(net->layer_names()[ip2], "ip2");
  net->add_after_backward([net, raw](int id) {
    if (id == ip2 && raw->iter() == 4) {
      net->layers()[ip2]->blobs()[0]->mutable_cpu_diff()[0] =
          std::numeric_limits<TypeParam>::infinity();
    }
  });
  EXPECT_ERROR_WITH(solver->Step(10), "Iteration 4 (lr = 0.05)",
                    "the update made weights NaN or infinite",
                    "the diff of param #0 of layer 'ip2' (InnerProduct)");
  EXPECT_EQ(solver->iter(), 4);
}

TYPED_TEST(DivergenceGpuTest, ANonFiniteLossSkipsTheUpdate) {
  auto reference = this->MakeSolver();
  reference->Step(2);
  auto solver = this->MakeSolver(/*nan_at=*/2);
  EXPECT_ERROR_WITH(solver->Step(10), "Iteration 2", "the loss is nan",
                    "top blob 'y' of layer 'data' (Input)");
  EXPECT_EQ(Weights(*solver), Weights(*reference));
}

}  // namespace
}  // namespace doppio
