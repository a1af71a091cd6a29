// NaN and infinity on the CPU engines, CAFFE and (where built) ONEDNN: the rule of
// nonfinite_cases.hpp (propagate, as PyTorch and cuDNN do) for ReLU, pooling and the losses.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "nonfinite_cases.hpp"

namespace doppio {
namespace {

using namespace nonfinite;

std::vector<std::string> CpuEngines() {
#ifdef DOPPIO_WITH_ONEDNN
  return {"CAFFE", "ONEDNN"};
#else
  return {"CAFFE"};
#endif
}

std::shared_ptr<Layer<float>> MakeOnCpu(const LayerParameter& param) {
  return LayerRegistry<float>::CreateLayer(param, Mode::CPU);
}

TEST(NonFiniteTest, ReLUPassesNaNOnAndMakesMinusInfinityZero) {
  for (const std::string& engine : CpuEngines()) {
    SCOPED_TRACE(engine);
    CheckReLU(MakeOnCpu, engine);
  }
}

TEST(NonFiniteTest, MaxPoolingOutputsNaNAndAWindowOfMinusInfinityIsMinusInfinity) {
  for (const std::string& engine : CpuEngines()) {
    SCOPED_TRACE(engine);
    CheckPooling(MakeOnCpu, engine, "MAX");
  }
}

TEST(NonFiniteTest, AvePoolingSumsNaNAndInfinity) {
  for (const std::string& engine : CpuEngines()) {
    SCOPED_TRACE(engine);
    CheckPooling(MakeOnCpu, engine, "AVE");
  }
}

// DEFAULT: the Softmax inside is ONEDNN's where the build has it.
TEST(NonFiniteTest, EveryLossOfANaNIsNaN) { CheckLosses(MakeOnCpu, {"CAFFE", "DEFAULT"}); }

}  // namespace
}  // namespace doppio
