// NaN and infinity on the GPU, the CAFFE kernels and the default engine (cuDNN where the build
// has it): the rule of nonfinite_cases.hpp, the CPU's, for ReLU, pooling and the losses.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "gpu_test_util.hpp"
#include "nonfinite_cases.hpp"

namespace doppio {
namespace {

using namespace nonfinite;

const std::vector<std::string> kGpuEngines = {"CAFFE", "DEFAULT"};

std::shared_ptr<Layer<float>> MakeOnGpu(const LayerParameter& param) {
  auto layer = LayerRegistry<float>::CreateLayer(param, Mode::GPU);
  layer->SetGpu(TestGpu());
  return layer;
}

TEST(NonFiniteGpuTest, ReLUPassesNaNOnAndMakesMinusInfinityZero) {
  DOPPIO_REQUIRE_GPU();
  for (const std::string& engine : kGpuEngines) {
    SCOPED_TRACE(engine);
    CheckReLU(MakeOnGpu, engine);
  }
}

TEST(NonFiniteGpuTest, MaxPoolingOutputsNaNAndAWindowOfMinusInfinityIsMinusInfinity) {
  DOPPIO_REQUIRE_GPU();
  for (const std::string& engine : kGpuEngines) {
    SCOPED_TRACE(engine);
    CheckPooling(MakeOnGpu, engine, "MAX");
  }
}

TEST(NonFiniteGpuTest, AvePoolingSumsNaNAndInfinity) {
  DOPPIO_REQUIRE_GPU();
  for (const std::string& engine : kGpuEngines) {
    SCOPED_TRACE(engine);
    CheckPooling(MakeOnGpu, engine, "AVE");
  }
}

TEST(NonFiniteGpuTest, EveryLossOfANaNIsNaN) {
  DOPPIO_REQUIRE_GPU();
  CheckLosses(MakeOnGpu, kGpuEngines);
}

}  // namespace
}  // namespace doppio
