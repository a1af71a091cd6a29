#include "doppio/solvers/lr_policy.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "test_util.hpp"

namespace doppio {
namespace {

SolverParameter Policy(const std::string& text) { return ParseText<SolverParameter>(text); }

void ExpectRate(const SolverParameter& param, int iter, double expected, int* step) {
  const double rate = LearningRate(param, iter, step);
  EXPECT_NEAR(rate, expected, 1e-12 * std::max(1.0, std::fabs(expected)))
      << param.lr_policy() << " at iteration " << iter;
}

TEST(LrPolicyTest, Fixed) {
  const auto param = Policy("lr_policy: 'fixed' base_lr: 0.25");
  int step = 0;
  for (int iter : {0, 1, 17, 100000}) ExpectRate(param, iter, 0.25, &step);
}

TEST(LrPolicyTest, Step) {
  const auto param = Policy("lr_policy: 'step' base_lr: 0.5 gamma: 0.1 stepsize: 3");
  int step = 0;
  for (int iter = 0; iter < 12; ++iter) {
    const int expected_step = iter / 3;
    ExpectRate(param, iter, double(0.5f) * std::pow(double(0.1f), expected_step), &step);
    EXPECT_EQ(step, expected_step);
  }
}

TEST(LrPolicyTest, Exp) {
  const auto param = Policy("lr_policy: 'exp' base_lr: 0.5 gamma: 0.9");
  int step = 0;
  for (int iter = 0; iter < 20; iter += 3) {
    ExpectRate(param, iter, double(0.5f) * std::pow(double(0.9f), iter), &step);
  }
}

TEST(LrPolicyTest, Inv) {
  const auto param = Policy("lr_policy: 'inv' base_lr: 0.01 gamma: 0.0001 power: 0.75");
  int step = 0;
  for (int iter : {0, 1, 10, 500, 10000}) {
    ExpectRate(param, iter, double(0.01f) * std::pow(1 + double(0.0001f) * iter, -double(0.75f)),
               &step);
  }
}

TEST(LrPolicyTest, Multistep) {
  const auto param =
      Policy("lr_policy: 'multistep' base_lr: 1 gamma: 0.5 stepvalue: 2 stepvalue: 5 stepvalue: 6");
  int step = 0;
  const int expected_steps[] = {0, 0, 1, 1, 1, 2, 3, 3, 3};
  for (int iter = 0; iter < 9; ++iter) {
    ExpectRate(param, iter, std::pow(0.5, expected_steps[iter]), &step);
    EXPECT_EQ(step, expected_steps[iter]) << "iteration " << iter;
  }
  // A solver resumed at a later iteration without its step count catches up at once.
  step = 0;
  ExpectRate(param, 7, std::pow(0.5, 3), &step);
  EXPECT_EQ(step, 3);
}

TEST(LrPolicyTest, Poly) {
  const auto param = Policy("lr_policy: 'poly' base_lr: 0.2 power: 2 max_iter: 40");
  int step = 0;
  for (int iter = 0; iter <= 40; iter += 5) {
    ExpectRate(param, iter, double(0.2f) * std::pow(1.0 - iter / 40.0, 2.0), &step);
  }
}

TEST(LrPolicyTest, Sigmoid) {
  const auto param = Policy("lr_policy: 'sigmoid' base_lr: 0.2 gamma: -0.5 stepsize: 10");
  int step = 0;
  for (int iter = 0; iter <= 30; iter += 3) {
    ExpectRate(param, iter, double(0.2f) / (1 + std::exp(-double(-0.5f) * (iter - 10.0))), &step);
  }
}

TEST(LrPolicyTest, LinearWarmupScalesAnyPolicy) {
  auto param = Policy(
      "lr_policy: 'step' base_lr: 0.8 gamma: 0.5 stepsize: 6 warmup_iter: 4 "
      "warmup_start_factor: 0.25");
  int step = 0;
  for (int iter = 0; iter < 10; ++iter) {
    double expected = double(0.8f) * std::pow(0.5, iter / 6);
    if (iter < 4) expected *= 0.25 + 0.75 * iter / 4.0;
    ExpectRate(param, iter, expected, &step);
  }
  // Without warmup_start_factor the warm-up starts from zero.
  param = Policy("lr_policy: 'fixed' base_lr: 1 warmup_iter: 10");
  ExpectRate(param, 0, 0.0, &step);
  ExpectRate(param, 5, 0.5, &step);
  ExpectRate(param, 10, 1.0, &step);
}

TEST(LrPolicyTest, UnknownPolicyIsAnErrorNamingIt) {
  try {
    CheckLearningRatePolicy(Policy("lr_policy: 'cosine' base_lr: 1"));
    FAIL() << "no error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("unknown lr_policy 'cosine'"), std::string::npos)
        << error.what();
    EXPECT_NE(std::string(error.what()).find("multistep"), std::string::npos) << error.what();
  }
  int step = 0;
  EXPECT_THROW(LearningRate(Policy("lr_policy: 'cosine'"), 0, &step), Error);
}

TEST(LrPolicyTest, MissingOrInconsistentFieldsAreErrors) {
  EXPECT_THROW(CheckLearningRatePolicy(Policy("base_lr: 1")), Error);
  EXPECT_THROW(CheckLearningRatePolicy(Policy("lr_policy: 'step' base_lr: 1 gamma: 0.1")), Error);
  EXPECT_THROW(CheckLearningRatePolicy(Policy("lr_policy: 'poly' base_lr: 1 power: 1")), Error);
  EXPECT_THROW(CheckLearningRatePolicy(
                   Policy("lr_policy: 'multistep' base_lr: 1 stepvalue: 5 stepvalue: 3")),
               Error);
  EXPECT_THROW(CheckLearningRatePolicy(Policy("lr_policy: 'fixed' warmup_iter: -1")), Error);
  EXPECT_NO_THROW(CheckLearningRatePolicy(Policy("lr_policy: 'step' stepsize: 1")));
}

}  // namespace
}  // namespace doppio
