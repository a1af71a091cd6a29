// --lr_scaling (lr_scaling.hpp): the factor for the global batch, and bad values naming the flag.
#include "doppio/parallel/lr_scaling.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "doppio/util/error.hpp"

namespace doppio {
namespace {

TEST(LrScalingTest, NamesParseBothWays) {
  for (LrScaling scaling : {LrScaling::kNone, LrScaling::kLinear, LrScaling::kSqrt}) {
    EXPECT_EQ(ParseLrScaling(LrScalingName(scaling)), scaling);
  }
}

TEST(LrScalingTest, FactorIsTheBatchRatioOrItsSquareRoot) {
  EXPECT_DOUBLE_EQ(LrScalingFactor(LrScaling::kLinear, 4096, 64), 64);
  EXPECT_DOUBLE_EQ(LrScalingFactor(LrScaling::kLinear, 32, 64), 0.5);
  EXPECT_DOUBLE_EQ(LrScalingFactor(LrScaling::kSqrt, 4096, 64), 8);
  EXPECT_DOUBLE_EQ(LrScalingFactor(LrScaling::kSqrt, 96, 64), std::sqrt(1.5));
  EXPECT_DOUBLE_EQ(LrScalingFactor(LrScaling::kNone, 4096, 64), 1);
  EXPECT_DOUBLE_EQ(LrScalingFactor(LrScaling::kLinear, 64, 64), 1);
}

// Expects `function` to throw an Error whose message contains `part`.
template <typename Function>
void ExpectErrorWith(Function function, const std::string& part) {
  try {
    function();
    ADD_FAILURE() << "no Error (expected one naming " << part << ")";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find(part), std::string::npos) << error.what();
  }
}

TEST(LrScalingTest, BadValuesAreErrorsNamingTheFlag) {
  ExpectErrorWith([] { ParseLrScaling("quadratic"); }, "--lr_scaling");
  ExpectErrorWith([] { ParseLrScaling("quadratic"); }, "'quadratic'");
  ExpectErrorWith([] { ParseLrScaling(""); }, "linear, sqrt or none");
  ExpectErrorWith([] { ParseLrScaling("Linear"); }, "--lr_scaling");
  ExpectErrorWith([] { LrScalingFactor(LrScaling::kLinear, 64, 0); }, "reference_batch");
  ExpectErrorWith([] { LrScalingFactor(LrScaling::kLinear, 0, 64); }, "global batch");
}

}  // namespace
}  // namespace doppio
