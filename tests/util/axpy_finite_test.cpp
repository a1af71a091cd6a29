// cpu_axpy_finite: y += alpha * x in one pass that also tells whether every result is finite
// (Net::Update's divergence check), in float and double, with the non-finite value anywhere.
#include <gtest/gtest.h>

#include <limits>
#include <vector>

#include "doppio/util/math_functions.hpp"
#include "test_util.hpp"

namespace doppio {
namespace {

template <typename Dtype>
class AxpyFiniteTest : public ::testing::Test {};
TYPED_TEST_SUITE(AxpyFiniteTest, TestDtypes);

TYPED_TEST(AxpyFiniteTest, UpdatesAsAxpyAndReportsNonFiniteResults) {
  using Dtype = TypeParam;
  const int n = 37;  // not a multiple of any vector width
  std::vector<Dtype> x(n), y(n), expected(n);
  for (int i = 0; i < n; ++i) {
    x[i] = Dtype(0.25) * i - 3;
    y[i] = Dtype(1.5) - i;
  }
  expected = y;
  cpu_axpy(n, Dtype(-1), x.data(), expected.data());
  EXPECT_TRUE(cpu_axpy_finite<Dtype>(n, Dtype(-1), x.data(), y.data()));
  EXPECT_EQ(y, expected);
  EXPECT_TRUE(cpu_axpy_finite<Dtype>(0, Dtype(-1), x.data(), y.data()));

  const Dtype nan = std::numeric_limits<Dtype>::quiet_NaN();
  const Dtype inf = std::numeric_limits<Dtype>::infinity();
  const Dtype huge = std::numeric_limits<Dtype>::max();
  for (int at : {0, 17, n - 1}) {
    for (Dtype bad : {nan, inf, -inf}) {
      std::vector<Dtype> step = x, weights = y;
      step[at] = bad;
      EXPECT_FALSE(cpu_axpy_finite<Dtype>(n, Dtype(-1), step.data(), weights.data()))
          << "at " << at << " " << bad;
    }
    // Finite operands whose result overflows.
    std::vector<Dtype> step = x, weights = y;
    step[at] = -huge;
    weights[at] = huge;
    EXPECT_FALSE(cpu_axpy_finite<Dtype>(n, Dtype(-1), step.data(), weights.data())) << at;
  }
  // The largest finite values and denormals are finite.
  std::vector<Dtype> step(n, 0), weights(n, std::numeric_limits<Dtype>::denorm_min());
  weights[3] = huge;
  weights[4] = -huge;
  EXPECT_TRUE(cpu_axpy_finite<Dtype>(n, Dtype(-1), step.data(), weights.data()));
}

}  // namespace
}  // namespace doppio
