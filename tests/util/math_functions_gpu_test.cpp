// The GPU math (cuBLAS and kernels) and im2col/col2im against the CPU versions. Skipped
// without a device.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "doppio/device/gpu_math.hpp"
#include "doppio/device/im2col_gpu.hpp"
#include "doppio/util/im2col.hpp"
#include "doppio/util/math_functions.hpp"
#include "gpu_test_util.hpp"
#include "test_util.hpp"

namespace doppio {
namespace {

template <typename Dtype>
class MathGpuTest : public ::testing::Test {
 protected:
  void SetUp() override { DOPPIO_REQUIRE_GPU(); }

  // A blob of n values with random data, already on the device.
  std::unique_ptr<Blob<Dtype>> Random(int n, double low = -1, double high = 1) {
    auto blob = std::make_unique<Blob<Dtype>>(std::vector<int>{n});
    FillUniform<Dtype>(blob.get(), rng_, Dtype(low), Dtype(high));
    return blob;
  }
  GpuContext& gpu() { return *TestGpu(); }

  Rng rng_{11};
};
TYPED_TEST_SUITE(MathGpuTest, TestDtypes);

TYPED_TEST(MathGpuTest, GemmAllTransposes) {
  using Dtype = TypeParam;
  const int m = 5, n = 7, k = 4;
  for (Trans ta : {Trans::kNo, Trans::kYes}) {
    for (Trans tb : {Trans::kNo, Trans::kYes}) {
      auto a = this->Random(m * k), b = this->Random(k * n), c = this->Random(m * n);
      Blob<Dtype> expected;
      expected.CopyFrom(*c, false, true);
      cpu_gemm<Dtype>(ta, tb, m, n, k, Dtype(0.7), a->cpu_data(), b->cpu_data(), Dtype(0.3),
                      expected.mutable_cpu_data());
      gpu_gemm<Dtype>(this->gpu(), ta, tb, m, n, k, Dtype(0.7), a->gpu_data(this->gpu()),
                      b->gpu_data(this->gpu()), Dtype(0.3), c->mutable_gpu_data(this->gpu()));
      ExpectBlobsClose(expected, *c, false, GpuTolerance<Dtype>(), "gemm");
    }
  }
}

TYPED_TEST(MathGpuTest, StridedBatchedGemmIsOneGemmPerBatch) {
  using Dtype = TypeParam;
  const int m = 3, n = 4, k = 2, batch = 3;
  auto a = this->Random(batch * m * k), b = this->Random(batch * k * n);
  auto c = this->Random(batch * m * n);
  Blob<Dtype> expected;
  expected.CopyFrom(*c, false, true);
  for (int i = 0; i < batch; ++i) {
    cpu_gemm<Dtype>(Trans::kNo, Trans::kYes, m, n, k, Dtype(1), a->cpu_data() + i * m * k,
                    b->cpu_data() + i * k * n, Dtype(0), expected.mutable_cpu_data() + i * m * n);
  }
  gpu_gemm_strided_batched<Dtype>(this->gpu(), Trans::kNo, Trans::kYes, m, n, k, Dtype(1),
                                  a->gpu_data(this->gpu()), m * k, b->gpu_data(this->gpu()), k * n,
                                  Dtype(0), c->mutable_gpu_data(this->gpu()), m * n, batch);
  ExpectBlobsClose(expected, *c, false, GpuTolerance<Dtype>(), "batched gemm");
}

TYPED_TEST(MathGpuTest, GemvBothWays) {
  using Dtype = TypeParam;
  const int m = 6, n = 5;
  for (Trans t : {Trans::kNo, Trans::kYes}) {
    auto a = this->Random(m * n), x = this->Random(t == Trans::kNo ? n : m);
    auto y = this->Random(t == Trans::kNo ? m : n);
    Blob<Dtype> expected;
    expected.CopyFrom(*y, false, true);
    cpu_gemv<Dtype>(t, m, n, Dtype(1.5), a->cpu_data(), x->cpu_data(), Dtype(-0.5),
                    expected.mutable_cpu_data());
    gpu_gemv<Dtype>(this->gpu(), t, m, n, Dtype(1.5), a->gpu_data(this->gpu()),
                    x->gpu_data(this->gpu()), Dtype(-0.5), y->mutable_gpu_data(this->gpu()));
    ExpectBlobsClose(expected, *y, false, GpuTolerance<Dtype>(), "gemv");
  }
}

TYPED_TEST(MathGpuTest, VectorOperations) {
  using Dtype = TypeParam;
  GpuContext& gpu = this->gpu();
  const int n = 1000;
  auto x = this->Random(n), y = this->Random(n), positive = this->Random(n, 0.5, 2);
  const double tol = GpuTolerance<Dtype>();
  double dot = 0, asum = 0, sum = 0;
  for (int i = 0; i < n; ++i) {
    dot += x->cpu_data()[i] * y->cpu_data()[i];
    asum += std::fabs(x->cpu_data()[i]);
    sum += x->cpu_data()[i];
  }
  EXPECT_NEAR(gpu_dot(gpu, n, x->gpu_data(gpu), y->gpu_data(gpu)), dot, 1e-3);
  EXPECT_NEAR(gpu_asum(gpu, n, x->gpu_data(gpu)), asum, 1e-3);
  EXPECT_NEAR(gpu_sum(gpu, n, x->gpu_data(gpu)), sum, 1e-3);
  EXPECT_EQ(gpu_sum(gpu, 0, x->gpu_data(gpu)), Dtype(0));

  // Each element-wise operation against its CPU twin.
  Blob<Dtype> expected({n}), actual({n});
  const auto check = [&](const char* what) {
    ExpectBlobsClose(expected, actual, false, tol, what);
  };
  const Dtype* xh = x->cpu_data();
  const Dtype* yh = y->cpu_data();
  const Dtype* ph = positive->cpu_data();
  const Dtype* xd = x->gpu_data(gpu);
  const Dtype* yd = y->gpu_data(gpu);
  const Dtype* pd = positive->gpu_data(gpu);
  cpu_add(n, xh, yh, expected.mutable_cpu_data());
  gpu_add(gpu, n, xd, yd, actual.mutable_gpu_data(gpu));
  check("add");
  cpu_sub(n, xh, yh, expected.mutable_cpu_data());
  gpu_sub(gpu, n, xd, yd, actual.mutable_gpu_data(gpu));
  check("sub");
  cpu_mul(n, xh, yh, expected.mutable_cpu_data());
  gpu_mul(gpu, n, xd, yd, actual.mutable_gpu_data(gpu));
  check("mul");
  cpu_div(n, xh, ph, expected.mutable_cpu_data());
  gpu_div(gpu, n, xd, pd, actual.mutable_gpu_data(gpu));
  check("div");
  cpu_powx(n, ph, Dtype(1.7), expected.mutable_cpu_data());
  gpu_powx(gpu, n, pd, Dtype(1.7), actual.mutable_gpu_data(gpu));
  check("powx");
  cpu_sqr(n, xh, expected.mutable_cpu_data());
  gpu_sqr(gpu, n, xd, actual.mutable_gpu_data(gpu));
  check("sqr");
  cpu_sqrt(n, ph, expected.mutable_cpu_data());
  gpu_sqrt(gpu, n, pd, actual.mutable_gpu_data(gpu));
  check("sqrt");
  cpu_exp(n, xh, expected.mutable_cpu_data());
  gpu_exp(gpu, n, xd, actual.mutable_gpu_data(gpu));
  check("exp");
  cpu_log(n, ph, expected.mutable_cpu_data());
  gpu_log(gpu, n, pd, actual.mutable_gpu_data(gpu));
  check("log");
  cpu_abs(n, xh, expected.mutable_cpu_data());
  gpu_abs(gpu, n, xd, actual.mutable_gpu_data(gpu));
  check("abs");
  cpu_sign(n, xh, expected.mutable_cpu_data());
  gpu_sign(gpu, n, xd, actual.mutable_gpu_data(gpu));
  check("sign");
  cpu_scale(n, Dtype(-3), xh, expected.mutable_cpu_data());
  gpu_scale(gpu, n, Dtype(-3), xd, actual.mutable_gpu_data(gpu));
  check("scale");
  cpu_copy(n, yh, expected.mutable_cpu_data());
  gpu_copy(gpu, n, yd, actual.mutable_gpu_data(gpu));
  check("copy");
  cpu_axpy(n, Dtype(2), xh, expected.mutable_cpu_data());
  gpu_axpy(gpu, n, Dtype(2), xd, actual.mutable_gpu_data(gpu));
  check("axpy");
  cpu_axpby(n, Dtype(0.5), xh, Dtype(-1), expected.mutable_cpu_data());
  gpu_axpby(gpu, n, Dtype(0.5), xd, Dtype(-1), actual.mutable_gpu_data(gpu));
  check("axpby");
  cpu_scal(n, Dtype(0.25), expected.mutable_cpu_data());
  gpu_scal(gpu, n, Dtype(0.25), actual.mutable_gpu_data(gpu));
  check("scal");
  cpu_add_scalar(n, Dtype(3), expected.mutable_cpu_data());
  gpu_add_scalar(gpu, n, Dtype(3), actual.mutable_gpu_data(gpu));
  check("add_scalar");
  cpu_set(n, Dtype(4.5), expected.mutable_cpu_data());
  gpu_set(gpu, n, Dtype(4.5), actual.mutable_gpu_data(gpu));
  check("set");
  cpu_set(n, Dtype(0), expected.mutable_cpu_data());
  gpu_set(gpu, n, Dtype(0), actual.mutable_gpu_data(gpu));
  check("set zero");
}

TYPED_TEST(MathGpuTest, RandomFillsHaveTheirStatisticsAndRepeatPerSeed) {
  using Dtype = TypeParam;
  GpuContext& gpu = this->gpu();
  const int n = 100000;
  Blob<Dtype> r({n});
  gpu_rng_uniform<Dtype>(gpu, n, Dtype(-2), Dtype(3), std::uint64_t(5), r.mutable_gpu_data(gpu));
  double mean = 0, low = 1e9, high = -1e9;
  for (int i = 0; i < n; ++i) {
    mean += r.cpu_data()[i];
    low = std::min<double>(low, r.cpu_data()[i]);
    high = std::max<double>(high, r.cpu_data()[i]);
  }
  EXPECT_NEAR(mean / n, 0.5, 0.05);
  EXPECT_GE(low, -2);
  EXPECT_LE(high, 3);
  const std::vector<Dtype> first(r.cpu_data(), r.cpu_data() + n);
  gpu_rng_uniform<Dtype>(gpu, n, Dtype(-2), Dtype(3), std::uint64_t(5), r.mutable_gpu_data(gpu));
  EXPECT_TRUE(std::equal(first.begin(), first.end(), r.cpu_data()));

  gpu_rng_gaussian<Dtype>(gpu, n, Dtype(1), Dtype(2), std::uint64_t(6), r.mutable_gpu_data(gpu));
  double m = 0, sq = 0;
  for (int i = 0; i < n; ++i) {
    m += r.cpu_data()[i];
    sq += r.cpu_data()[i] * r.cpu_data()[i];
  }
  m /= n;
  EXPECT_NEAR(m, 1, 0.05);
  EXPECT_NEAR(std::sqrt(sq / n - m * m), 2, 0.05);

  SyncedMemory mask(sizeof(unsigned int) * n);
  gpu_rng_bernoulli<Dtype>(gpu, n, Dtype(0.3), std::uint64_t(7),
                           static_cast<unsigned int*>(mask.mutable_gpu_data(gpu)));
  const unsigned int* bits = static_cast<const unsigned int*>(mask.cpu_data());
  int ones = 0;
  for (int i = 0; i < n; ++i) {
    ASSERT_LE(bits[i], 1u);
    ones += bits[i];
  }
  EXPECT_NEAR(double(ones) / n, 0.3, 0.01);
}

TYPED_TEST(MathGpuTest, Im2colAndCol2imMatchTheCpu) {
  using Dtype = TypeParam;
  GpuContext& gpu = this->gpu();
  struct Geometry {
    int channels, height, width, kh, kw, ph, pw, sh, sw, dh, dw;
  };
  for (const Geometry g :
       {Geometry{3, 6, 5, 3, 3, 1, 1, 1, 1, 1, 1}, Geometry{2, 7, 8, 3, 2, 2, 0, 2, 3, 1, 1},
        Geometry{2, 9, 9, 3, 3, 2, 2, 1, 2, 2, 2}, Geometry{1, 4, 4, 1, 1, 0, 0, 1, 1, 1, 1}}) {
    const int oh = ConvOutputSize(g.height, g.kh, g.ph, g.sh, g.dh);
    const int ow = ConvOutputSize(g.width, g.kw, g.pw, g.sw, g.dw);
    auto image = this->Random(g.channels * g.height * g.width);
    const int col_count = g.channels * g.kh * g.kw * oh * ow;
    Blob<Dtype> expected({col_count}), actual({col_count});
    im2col_cpu(image->cpu_data(), g.channels, g.height, g.width, g.kh, g.kw, g.ph, g.pw, g.sh, g.sw,
               g.dh, g.dw, expected.mutable_cpu_data());
    im2col_gpu(gpu, image->gpu_data(gpu), g.channels, g.height, g.width, g.kh, g.kw, g.ph, g.pw,
               g.sh, g.sw, g.dh, g.dw, actual.mutable_gpu_data(gpu));
    ExpectBlobsClose(expected, actual, false, 0, "im2col");
    auto col = this->Random(col_count);
    Blob<Dtype> image_expected({image->count()}), image_actual({image->count()});
    col2im_cpu(col->cpu_data(), g.channels, g.height, g.width, g.kh, g.kw, g.ph, g.pw, g.sh, g.sw,
               g.dh, g.dw, image_expected.mutable_cpu_data());
    col2im_gpu(gpu, col->gpu_data(gpu), g.channels, g.height, g.width, g.kh, g.kw, g.ph, g.pw, g.sh,
               g.sw, g.dh, g.dw, image_actual.mutable_gpu_data(gpu));
    ExpectBlobsClose(image_expected, image_actual, false, GpuTolerance<Dtype>(), "col2im");
  }
}

}  // namespace
}  // namespace doppio
