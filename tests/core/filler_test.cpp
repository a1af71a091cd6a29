#include "doppio/core/filler.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "test_util.hpp"

namespace doppio {
namespace {

template <typename Dtype>
class FillerTest : public ::testing::Test {
 protected:
  FillerTest() : blob_({40, 30, 3, 3}), rng_(1234) {}
  void Fill(const std::string& text) {
    GetFiller<Dtype>(ParseText<FillerParameter>(text))->Fill(&blob_, rng_);
  }
  Dtype Mean() const {
    double sum = 0;
    for (int i = 0; i < blob_.count(); ++i) sum += blob_.cpu_data()[i];
    return sum / blob_.count();
  }
  Dtype Variance() const {
    const double mean = Mean();
    double sum = 0;
    for (int i = 0; i < blob_.count(); ++i) {
      sum += (blob_.cpu_data()[i] - mean) * (blob_.cpu_data()[i] - mean);
    }
    return sum / blob_.count();
  }
  Blob<Dtype> blob_;
  Rng rng_;
};
TYPED_TEST_SUITE(FillerTest, TestDtypes);

TYPED_TEST(FillerTest, Constant) {
  this->Fill("type: 'constant' value: 2.5");
  for (int i = 0; i < this->blob_.count(); ++i) EXPECT_EQ(this->blob_.cpu_data()[i], 2.5);
}

TYPED_TEST(FillerTest, UniformStaysInRange) {
  this->Fill("type: 'uniform' min: -3 max: 1");
  for (int i = 0; i < this->blob_.count(); ++i) {
    EXPECT_GE(this->blob_.cpu_data()[i], -3);
    EXPECT_LE(this->blob_.cpu_data()[i], 1);
  }
  EXPECT_NEAR(this->Mean(), -1, 0.05);
}

TYPED_TEST(FillerTest, GaussianMeanAndStd) {
  this->Fill("type: 'gaussian' mean: 1 std: 0.5");
  EXPECT_NEAR(this->Mean(), 1, 0.02);
  EXPECT_NEAR(std::sqrt(this->Variance()), 0.5, 0.02);
}

TYPED_TEST(FillerTest, SparseGaussianKeepsAboutSparseInputsPerOutput) {
  // 40 outputs, sparse 8: about 1 in 5 weights non-zero.
  this->Fill("type: 'gaussian' std: 1 sparse: 8");
  int non_zero = 0;
  for (int i = 0; i < this->blob_.count(); ++i) non_zero += this->blob_.cpu_data()[i] != 0;
  EXPECT_NEAR(non_zero / double(this->blob_.count()), 8.0 / 40, 0.02);
}

TYPED_TEST(FillerTest, XavierScalesByFanIn) {
  this->Fill("type: 'xavier'");
  const double fan_in = 30 * 3 * 3;
  const double bound = std::sqrt(3.0 / fan_in);
  for (int i = 0; i < this->blob_.count(); ++i) {
    EXPECT_LE(std::fabs(this->blob_.cpu_data()[i]), bound + 1e-7);
  }
  // Uniform on [-b, b] has variance b^2 / 3 = 1 / fan_in.
  EXPECT_NEAR(this->Variance(), 1.0 / fan_in, 0.1 / fan_in);
}

TYPED_TEST(FillerTest, XavierFanOutAndAverage) {
  this->Fill("type: 'xavier' variance_norm: FAN_OUT");
  EXPECT_NEAR(this->Variance(), 1.0 / (40 * 9), 0.1 / (40 * 9));
  this->Fill("type: 'xavier' variance_norm: AVERAGE");
  const double n = (30 * 9 + 40 * 9) / 2.0;
  EXPECT_NEAR(this->Variance(), 1.0 / n, 0.1 / n);
}

TYPED_TEST(FillerTest, MsraStd) {
  this->Fill("type: 'msra'");
  EXPECT_NEAR(this->Variance(), 2.0 / (30 * 9), 0.2 / (30 * 9));
}

TYPED_TEST(FillerTest, PositiveUnitballRowsSumToOne) {
  this->Fill("type: 'positive_unitball'");
  const int dim = this->blob_.count() / 40;
  for (int n = 0; n < 40; ++n) {
    double sum = 0;
    for (int j = 0; j < dim; ++j) {
      EXPECT_GE(this->blob_.cpu_data()[n * dim + j], 0);
      sum += this->blob_.cpu_data()[n * dim + j];
    }
    EXPECT_NEAR(sum, 1, 1e-5);
  }
}

TYPED_TEST(FillerTest, BilinearKernelOfSizeFour) {
  Blob<TypeParam> kernel({1, 1, 4, 4});
  Rng rng(1);
  GetFiller<TypeParam>(ParseText<FillerParameter>("type: 'bilinear'"))->Fill(&kernel, rng);
  // Up-sampling by 2: f = 2, c = 3/4, 1-d weights 0.25 0.75 0.75 0.25.
  const double w[4] = {0.25, 0.75, 0.75, 0.25};
  for (int y = 0; y < 4; ++y) {
    for (int x = 0; x < 4; ++x) EXPECT_NEAR(kernel.cpu_data()[y * 4 + x], w[y] * w[x], 1e-6);
  }
  Blob<TypeParam> not_square({1, 1, 4, 3});
  EXPECT_THROW(
      GetFiller<TypeParam>(ParseText<FillerParameter>("type: 'bilinear'"))->Fill(&not_square, rng),
      Error);
}

TYPED_TEST(FillerTest, UnknownTypeNamesIt) {
  try {
    GetFiller<TypeParam>(ParseText<FillerParameter>("type: 'glorious'"));
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("glorious"), std::string::npos);
  }
}

}  // namespace
}  // namespace doppio
