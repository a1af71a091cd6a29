// The precision policy (core/precision.hpp): names, what a net asks each layer for, and which
// precisions a machine refuses, with the messages a user reads.
#include "doppio/core/precision.hpp"

#include <gtest/gtest.h>

#include <string>

#include "doppio/core/net.hpp"
#include "doppio/device/onednn.hpp"
#include "doppio/util/error.hpp"
#include "expect_error.hpp"
#include "test_util.hpp"

namespace doppio {
namespace {

// On the CPU.
std::string ErrorOf(Precision precision) {
  try {
    CheckPrecisionRuns(precision, nullptr, "solver.prototxt");
  } catch (const Error& error) {
    return error.what();
  }
  return "";
}

TEST(PrecisionTest, NamesParseBackInAnyCase) {
  for (Precision precision : {FP32, TF32, BF16, FP16}) {
    EXPECT_EQ(ParsePrecision(PrecisionName(precision), "--precision"), precision);
  }
  EXPECT_EQ(ParsePrecision("BF16", "--precision"), BF16);
  EXPECT_EQ(DescribePrecision({FP32, TF32}), "fp32/tf32");
  EXPECT_EQ(DescribePrecision({BF16, BF16}), "bf16");
  EXPECT_ERROR_WITH(ParsePrecision("half", "--precision"), "--precision", "'half'");
}

TEST(PrecisionTest, LossesAndSoftmaxKeepFp32UnlessTheyNameOne) {
  LayerParameter conv, loss, softmax, accuracy, own;
  conv.set_type("Convolution");
  loss.set_type("SoftmaxWithLoss");
  softmax.set_type("Softmax");
  accuracy.set_type("Accuracy");
  own.set_type("EuclideanLoss");
  own.set_precision(BF16);
  EXPECT_EQ(RequestedPrecision(conv, BF16), BF16);
  EXPECT_EQ(RequestedPrecision(conv, FP32), FP32);
  EXPECT_EQ(RequestedPrecision(loss, BF16), FP32);
  EXPECT_EQ(RequestedPrecision(softmax, BF16), FP32);
  EXPECT_EQ(RequestedPrecision(accuracy, BF16), FP32);
  EXPECT_EQ(RequestedPrecision(own, FP32), BF16);
  EXPECT_TRUE(NamesItsPrecision(own));
  EXPECT_FALSE(NamesItsPrecision(conv));
}

TEST(PrecisionTest, WhatNoMachineHereRunsIsAnErrorNamingWhereAndWhat) {
  EXPECT_EQ(ErrorOf(FP32), "");
  EXPECT_EQ(ErrorOf(PRECISION_DEFAULT), "");
  for (Precision precision : {FP16, TF32}) {
    const std::string what = ErrorOf(precision);
    EXPECT_NE(what.find("solver.prototxt"), std::string::npos) << what;
    EXPECT_NE(what.find("precision " + PrecisionName(precision)), std::string::npos) << what;
    EXPECT_NE(what.find("CPU"), std::string::npos) << what;
  }
  // BF16 on the CPU: accepted exactly where oneDNN runs it at this CPU's speed.
#ifdef DOPPIO_WITH_ONEDNN
  const std::string missing = OnednnBf16Missing();
  const std::string what = ErrorOf(BF16);
  if (missing.empty()) {
    EXPECT_EQ(what, "");
  } else {
    EXPECT_NE(what.find("avx512_bf16"), std::string::npos) << what;
  }
#endif
}

TEST(PrecisionTest, GpusBeforeTheirTensorCoresAreRefusedWithBothCapabilities) {
  EXPECT_EQ(GpuLacksPrecision(FP32, 35), "");
  EXPECT_EQ(GpuLacksPrecision(FP16, 70), "");
  EXPECT_EQ(GpuLacksPrecision(BF16, 80), "");
  EXPECT_EQ(GpuLacksPrecision(TF32, 90), "");
  const std::string fp16 = GpuLacksPrecision(FP16, 61);
  EXPECT_NE(fp16.find("fp16 needs compute capability 7.0"), std::string::npos) << fp16;
  EXPECT_NE(fp16.find("this GPU has 6.1"), std::string::npos) << fp16;
  const std::string bf16 = GpuLacksPrecision(BF16, 75);
  EXPECT_NE(bf16.find("bf16 needs compute capability 8.0"), std::string::npos) << bf16;
  EXPECT_NE(bf16.find("7.5"), std::string::npos) << bf16;
  EXPECT_NE(GpuLacksPrecision(TF32, 75), "");
}

TEST(PrecisionTest, NetRefusesWhatItsMachineCannotRun) {
  NetParameter param = ParseText<NetParameter>(R"(
    name: 'small'
    precision: FP16
    layer { name: 'data' type: 'Input' top: 'data'
            input_param { shape { dim: 1 dim: 2 } } }
  )");
  EXPECT_ERROR_WITH(Net<float>{param}, "net 'small'", "fp16");
  param.set_precision(FP32);
  param.mutable_layer(0)->set_precision(TF32);
  EXPECT_ERROR_WITH(Net<float>{param}, "'data'", "tf32");
}

}  // namespace
}  // namespace doppio
