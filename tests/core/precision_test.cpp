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

std::string ErrorOf(Precision precision, bool gpu) {
  try {
    CheckPrecisionRuns(precision, gpu, "solver.prototxt");
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
  EXPECT_EQ(ErrorOf(FP32, false), "");
  EXPECT_EQ(ErrorOf(PRECISION_DEFAULT, true), "");
  EXPECT_EQ(ErrorOf(TF32, true), "");
  for (const auto& [precision, gpu] : {std::pair{FP16, false}, std::pair{TF32, false},
                                       std::pair{BF16, true}, std::pair{FP16, true}}) {
    const std::string what = ErrorOf(precision, gpu);
    EXPECT_NE(what.find("solver.prototxt"), std::string::npos) << what;
    EXPECT_NE(what.find("precision " + PrecisionName(precision)), std::string::npos) << what;
    EXPECT_NE(what.find(gpu ? "GPU" : "CPU"), std::string::npos) << what;
  }
  // BF16 on the CPU: accepted exactly where oneDNN runs it at this CPU's speed.
#ifdef DOPPIO_WITH_ONEDNN
  const std::string missing = OnednnBf16Missing();
  const std::string what = ErrorOf(BF16, false);
  if (missing.empty()) {
    EXPECT_EQ(what, "");
  } else {
    EXPECT_NE(what.find("avx512_bf16"), std::string::npos) << what;
  }
#endif
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
