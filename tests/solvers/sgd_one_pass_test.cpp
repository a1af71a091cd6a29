// The one-pass momentum-SGD step over the parameter arena (solvers/sgd_one_pass.hpp) against
// the update computed by hand element by element: two parameters of their own rate and decay,
// L2 and L1, gradient averaging over iter_size, decay 0 leaving an infinite weight's step
// alone; the finite check; and on the GPU (under the emulation too) the same values.
#include "doppio/solvers/sgd_one_pass.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#ifdef DOPPIO_WITH_CUDA
#include "doppio/core/blob.hpp"
#include "gpu_test_util.hpp"
#endif

namespace doppio {
namespace {

struct Arena {
  std::vector<double> weights{0.5, -2.0, 0.0, 3.0, -1.0};
  std::vector<double> diff{0.1, 0.2, -0.3, 0.4, 0.05};
  std::vector<double> history{0.01, -0.02, 0.0, 0.5, 0.25};
};

// Parameter 0: elements 0-1, rate 0.1, decay 0.01; parameter 1: elements 2-4, rate 0.2, no
// decay.
const std::vector<SgdSegment<double>> kSegments = {{2, 0.1, 0.01}, {5, 0.2, 0.0}};

void ExpectHandComputed(const Arena& before, const Arena& after, double grad_scale, double momentum,
                        bool l1) {
  for (int i = 0; i < 5; ++i) {
    const SgdSegment<double>& s = kSegments[i < 2 ? 0 : 1];
    const double w = before.weights[i];
    const double r = l1 ? (w > 0) - (w < 0) : w;
    const double d = before.diff[i] * grad_scale + s.decay * r;
    const double h = s.rate * d + momentum * before.history[i];
    EXPECT_NEAR(after.history[i], h, 1e-15) << i;
    EXPECT_NEAR(after.diff[i], h, 1e-15) << i;
    EXPECT_NEAR(after.weights[i], w - h, 1e-15) << i;
  }
}

TEST(SgdOnePassTest, L2EqualsTheHandComputedStep) {
  Arena a;
  const Arena before = a;
  EXPECT_TRUE(cpu_sgd_one_pass(kSegments, 1.0, 0.9, false, a.weights.data(), a.diff.data(),
                               a.history.data()));
  ExpectHandComputed(before, a, 1.0, 0.9, false);
}

TEST(SgdOnePassTest, L1AndIterSizeEqualTheHandComputedStep) {
  Arena a;
  const Arena before = a;
  EXPECT_TRUE(cpu_sgd_one_pass(kSegments, 0.25, 0.5, true, a.weights.data(), a.diff.data(),
                               a.history.data()));
  ExpectHandComputed(before, a, 0.25, 0.5, true);
}

TEST(SgdOnePassTest, ANonFiniteWeightIsReported) {
  Arena a;
  a.weights[3] = std::numeric_limits<double>::infinity();  // a parameter without decay
  EXPECT_FALSE(cpu_sgd_one_pass(kSegments, 1.0, 0.9, false, a.weights.data(), a.diff.data(),
                                a.history.data()));
  // No decay: 0 * inf is never formed, so the step itself stays finite.
  EXPECT_TRUE(std::isfinite(a.history[3]));
  Arena b;
  b.diff[0] = std::numeric_limits<double>::quiet_NaN();
  EXPECT_FALSE(cpu_sgd_one_pass(kSegments, 1.0, 0.9, false, b.weights.data(), b.diff.data(),
                                b.history.data()));
}

#ifdef DOPPIO_WITH_CUDA
TEST(SgdOnePassTest, GpuEqualsCpu) {
  DOPPIO_REQUIRE_GPU();
  GpuContext& gpu = *TestGpu();
  for (const bool l1 : {false, true}) {
    Arena cpu;
    Blob<double> weights(std::vector<int>{5}), diff(std::vector<int>{5}),
        history(std::vector<int>{5});
    for (int i = 0; i < 5; ++i) {
      weights.mutable_cpu_data()[i] = cpu.weights[i];
      diff.mutable_cpu_data()[i] = cpu.diff[i];
      history.mutable_cpu_data()[i] = cpu.history[i];
    }
    EXPECT_TRUE(gpu_sgd_one_pass(gpu, kSegments, 0.5, 0.9, l1, weights.mutable_gpu_data(gpu),
                                 diff.mutable_gpu_data(gpu), history.mutable_gpu_data(gpu)));
    EXPECT_TRUE(cpu_sgd_one_pass(kSegments, 0.5, 0.9, l1, cpu.weights.data(), cpu.diff.data(),
                                 cpu.history.data()));
    for (int i = 0; i < 5; ++i) {
      EXPECT_NEAR(weights.cpu_data()[i], cpu.weights[i], 1e-15) << i;
      EXPECT_NEAR(diff.cpu_data()[i], cpu.diff[i], 1e-15) << i;
      EXPECT_NEAR(history.cpu_data()[i], cpu.history[i], 1e-15) << i;
    }
  }
  Blob<double> weights(std::vector<int>{5}), diff(std::vector<int>{5}),
      history(std::vector<int>{5});
  Arena nan;
  nan.diff[4] = std::numeric_limits<double>::quiet_NaN();
  for (int i = 0; i < 5; ++i) {
    weights.mutable_cpu_data()[i] = nan.weights[i];
    diff.mutable_cpu_data()[i] = nan.diff[i];
    history.mutable_cpu_data()[i] = nan.history[i];
  }
  EXPECT_FALSE(gpu_sgd_one_pass(gpu, kSegments, 1.0, 0.9, false, weights.mutable_gpu_data(gpu),
                                diff.mutable_gpu_data(gpu), history.mutable_gpu_data(gpu)));
}
#endif

}  // namespace
}  // namespace doppio
