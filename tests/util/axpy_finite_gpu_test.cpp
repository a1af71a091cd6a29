// gpu_axpy_finite gives cpu_axpy_finite's results and answer on device memory. Skipped
// without a device.
#include <gtest/gtest.h>

#include <limits>
#include <vector>

#include "doppio/device/gpu_math.hpp"
#include "doppio/util/math_functions.hpp"
#include "gpu_test_util.hpp"
#include "test_util.hpp"

namespace doppio {
namespace {

template <typename Dtype>
class AxpyFiniteGpuTest : public ::testing::Test {
 protected:
  void SetUp() override { DOPPIO_REQUIRE_GPU(); }
};
TYPED_TEST_SUITE(AxpyFiniteGpuTest, TestDtypes);

TYPED_TEST(AxpyFiniteGpuTest, MatchesTheCpu) {
  using Dtype = TypeParam;
  GpuContext& gpu = *TestGpu();
  const int n = 3000;  // several blocks
  Blob<Dtype> x({n}), y({n});
  Rng rng(3);
  FillUniform<Dtype>(&x, rng, Dtype(-1), Dtype(1));
  FillUniform<Dtype>(&y, rng, Dtype(-1), Dtype(1));
  for (const Dtype bad : {Dtype(0), std::numeric_limits<Dtype>::quiet_NaN(),
                          std::numeric_limits<Dtype>::infinity()}) {
    for (int at : {0, n / 2, n - 1}) {
      std::vector<Dtype> cpu_y(y.cpu_data(), y.cpu_data() + n);
      std::vector<Dtype> step(x.cpu_data(), x.cpu_data() + n);
      if (bad != 0) step[at] = bad;
      Blob<Dtype> gx({n}), gy({n});
      std::copy(step.begin(), step.end(), gx.mutable_cpu_data());
      std::copy(cpu_y.begin(), cpu_y.end(), gy.mutable_cpu_data());
      const bool cpu_finite = cpu_axpy_finite<Dtype>(n, Dtype(-1), step.data(), cpu_y.data());
      const bool gpu_finite =
          gpu_axpy_finite<Dtype>(gpu, n, Dtype(-1), gx.gpu_data(gpu), gy.mutable_gpu_data(gpu));
      EXPECT_EQ(cpu_finite, bad == 0) << at;
      EXPECT_EQ(gpu_finite, cpu_finite) << at << " " << bad;
      for (int i = 0; i < n; ++i) {
        if (i == at && bad != 0) continue;
        ASSERT_EQ(gy.cpu_data()[i], cpu_y[i]) << i;
      }
    }
  }
}

}  // namespace
}  // namespace doppio
