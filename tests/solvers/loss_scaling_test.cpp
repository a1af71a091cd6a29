// Dynamic loss scaling (SolverParameter's loss_scaling, docs/precision.md): a power-of-two
// scale changes no bit of training; an overflow skips the update, halves the scale and goes
// on, never stopping training as divergence unless the scale is at its floor; clean updates
// grow it; a snapshot carries it, and a resumed run continues as the uninterrupted one.
#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <string>
#include <vector>

#include "doppio/solvers/sgd_solvers.hpp"
#include "solver_test_util.hpp"

namespace doppio {
namespace {

using namespace solver_test;

// The least-squares net with its loss weighted by 1e6, so that its largest gradient is far
// above 1 and a representable scale can overflow it.
SolverParameter ScaledSolver(const std::string& extra) {
  SolverParameter param = LeastSquaresSolver("momentum: 0.9 " + extra);
  for (LayerParameter& layer : *param.mutable_net_param()->mutable_layer()) {
    if (layer.type() == "EuclideanLoss") layer.add_loss_weight(1e6f);
  }
  return param;
}

// The largest gradient magnitude of the first iteration, unscaled.
float LargestGradient() {
  auto solver = MakeSolver<float>(ScaledSolver("base_lr: 0"));
  FillIterationData(*solver->net(), 0);
  solver->net()->ClearParamDiffs();
  solver->net()->ForwardBackward();
  float largest = 0;
  for (const Blob<float>* blob : solver->net()->learnable_params()) {
    for (int i = 0; i < blob->count(); ++i)
      largest = std::max(largest, std::fabs(blob->cpu_diff()[i]));
  }
  return largest;
}

// The power of two that takes the largest gradient to at least twice FLT_MAX: an overflow.
float OverflowingScale() {
  const float largest = LargestGradient();
  EXPECT_GT(largest, 1.f);
  return std::exp2(std::ceil(std::log2(2.0 * FLT_MAX / largest)));
}

TEST(LossScalingTest, OnWhereAskedAndUnderFp16ByDefault) {
  EXPECT_FALSE(ScalesLoss(ParseText<SolverParameter>("")));
  EXPECT_FALSE(ScalesLoss(ParseText<SolverParameter>("precision: BF16")));
  EXPECT_TRUE(ScalesLoss(ParseText<SolverParameter>("precision: FP16")));
  EXPECT_FALSE(
      ScalesLoss(ParseText<SolverParameter>("precision: FP16 loss_scaling: NO_LOSS_SCALING")));
  EXPECT_TRUE(ScalesLoss(ParseText<SolverParameter>("loss_scaling: DYNAMIC_LOSS_SCALING")));
}

TEST(LossScalingTest, APowerOfTwoScaleChangesNoBit) {
  auto plain = MakeSolver<float>(ScaledSolver("base_lr: 1e-8"));
  auto scaled = MakeSolver<float>(
      ScaledSolver("base_lr: 1e-8 loss_scaling: DYNAMIC_LOSS_SCALING loss_scale: 1024 "
                   "loss_scale_window: 3"));
  plain->Solve();
  scaled->Solve();
  EXPECT_EQ(Weights(*scaled), Weights(*plain));
  // 10 clean updates with a window of 3: doubled three times.
  EXPECT_EQ(scaled->loss_scale(), 1024.f * 8);
}

TEST(LossScalingTest, AnOverflowSkipsTheUpdateHalvesTheScaleAndTrainingGoesOn) {
  const float scale = OverflowingScale();
  SolverParameter param = ScaledSolver("base_lr: 1e-8 loss_scaling: DYNAMIC_LOSS_SCALING");
  param.set_loss_scale(scale);
  auto solver = MakeSolver<float>(param);
  const std::vector<float> before = Weights(*solver);
  solver->Step(1);
  EXPECT_EQ(solver->iter(), 1);
  EXPECT_EQ(Weights(*solver), before) << "the overflowed update was applied";
  EXPECT_EQ(solver->loss_scale(), scale / 2);
  EXPECT_FALSE(solver->divergence().has_value());
  // The scale comes down until the gradients fit, and training goes on with it.
  solver->Step(9);
  EXPECT_EQ(solver->iter(), 10);
  EXPECT_LT(solver->loss_scale(), scale / 2);
  const std::vector<float> after = Weights(*solver);
  EXPECT_NE(after, before);
  for (float value : after) EXPECT_TRUE(std::isfinite(value));
}

TEST(LossScalingTest, AnOverflowAtTheFloorIsDivergence) {
  const float scale = OverflowingScale();
  SolverParameter param = ScaledSolver("base_lr: 1e-8 loss_scaling: DYNAMIC_LOSS_SCALING");
  param.set_loss_scale(scale);
  param.set_loss_scale_min(scale);
  auto solver = MakeSolver<float>(param);
  try {
    solver->Step(1);
    FAIL() << "an overflow at loss_scale_min did not stop training";
  } catch (const Error& error) {
    // The exit status matters here, which EXPECT_ERROR_WITH does not check.
    EXPECT_EQ(error.code(), ExitCode::kDiverged);
    EXPECT_NE(std::string(error.what()).find("loss_scale_min"), std::string::npos) << error.what();
  }
}

TEST(LossScalingTest, BadFieldsAreErrorsNamingThem) {
  EXPECT_ERROR_WITH(SolverRegistry<float>::CreateSolver(LeastSquaresSolver("loss_scale: 0")),
                    "loss_scale must be positive");
  EXPECT_ERROR_WITH(SolverRegistry<float>::CreateSolver(LeastSquaresSolver("loss_scale_window: 0")),
                    "loss_scale_window must be >= 1");
  EXPECT_ERROR_WITH(
      SolverRegistry<float>::CreateSolver(LeastSquaresSolver("loss_scale: 8 loss_scale_min: 16")),
      "loss_scale_min must be positive and at most loss_scale (8)");
}

TEST(LossScalingTest, AResumedRunContinuesWithTheSameScale) {
  TempDir dir;
  const float scale = OverflowingScale();
  SolverParameter param =
      ScaledSolver("base_lr: 1e-8 loss_scaling: DYNAMIC_LOSS_SCALING loss_scale_window: 4");
  param.set_loss_scale(scale);
  param.set_snapshot_prefix(dir.path() + "/scaled");
  auto whole = MakeSolver<float>(param);
  whole->Step(12);

  auto first = MakeSolver<float>(param);
  first->Step(6);
  first->Snapshot();
  const float scale_at_6 = first->loss_scale();
  auto resumed = MakeSolver<float>(param);
  resumed->Restore(first->SnapshotFilename(".solverstate"));
  EXPECT_EQ(resumed->loss_scale(), scale_at_6);
  resumed->Step(6);
  EXPECT_EQ(resumed->loss_scale(), whole->loss_scale());
  EXPECT_EQ(Weights(*resumed), Weights(*whole));
}

}  // namespace
}  // namespace doppio
