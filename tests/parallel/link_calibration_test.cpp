// The fits of `doppio scale --calibrate` against hand-computed points, and its model column
// against the model that `doppio scale` predicts with.
#include <gtest/gtest.h>

#include "doppio/parallel/link_calibration.hpp"
#include "test_util.hpp"

namespace doppio {
namespace {

TEST(LinkCalibration, AlphaIsTheFastestSmallMessageAndBetaTheSlopeBeyondIt) {
  // alpha 10 us (the 4 KB one; the 8 B one was slowed down), beta 1 ns/byte above 1 KB
  // except at 256 KB, 2 ns.
  const std::vector<CalibrationPoint> points = {{8, 50e-6, 0},
                                                {1024, 10e-6 + 1024e-9, 0},
                                                {4096, 10e-6, 0},
                                                {65536, 10e-6 + 65536e-9, 0},
                                                {262144, 10e-6 + 2 * 262144e-9, 0}};
  LinkCost link;
  FitAlphaBeta(points, &link);
  EXPECT_DOUBLE_EQ(link.alpha, 10e-6);
  // Least squares through the origin of (bytes, seconds - alpha) from 1 KB:
  // sum(b * t) / sum(b^2).
  const double num = 1024.0 * 1024e-9 + 4096.0 * 0 + 65536.0 * 65536e-9 + 262144.0 * 2 * 262144e-9;
  const double den = 1024.0 * 1024 + 4096.0 * 4096 + 65536.0 * 65536 + 262144.0 * 262144;
  EXPECT_NEAR(link.beta, num / den, 1e-18);
  ASSERT_EQ(link.beta_curve.size(), 2u);
  EXPECT_EQ(link.beta_curve[0].bytes, 65536);
  EXPECT_NEAR(link.beta_curve[0].beta, 1e-9, 1e-18);
  EXPECT_NEAR(link.beta_curve[1].beta, 2e-9, 1e-18);
}

TEST(LinkCalibration, GammaIsWhatTheAllreduceTakesBeyondMovingItsBytes) {
  LinkCost link;
  link.alpha = 1e-5;
  link.beta = 1e-9;
  // 2 ranks, ring: 2 steps of alpha + n/2 beta, 1 reduction of n/2 at gamma 3e-10.
  std::vector<CalibrationPoint> points;
  for (double n : {1e5, 1e6}) points.push_back({n, 2 * (1e-5 + n / 2 * 1e-9) + n / 2 * 3e-10, 0});
  EXPECT_NEAR(FitGamma(points, 2, link), 3e-10, 1e-20);
  // Faster than the bytes allow: no negative gamma.
  for (auto& point : points) point.seconds = 1e-6;
  EXPECT_EQ(FitGamma(points, 2, link), 0);
}

TEST(LinkCalibration, BroadcastFactorIsTheShareOfBetaTheRootsLinkCosts) {
  LinkCost link;
  link.alpha = 1e-5;
  link.beta = 1e-9;
  // 3 ranks, linear: the root sends 2 copies at once; measured at 0.75 of beta.
  std::vector<CalibrationPoint> points;
  for (double n : {1e5, 1e6}) points.push_back({n, 1e-5 + 2 * n * 0.75e-9, 0});
  EXPECT_NEAR(FitBroadcastFactor(points, 3, link), 0.75, 1e-9);
  for (auto& point : points) point.seconds = 0;
  EXPECT_EQ(FitBroadcastFactor(points, 3, link), 1);
}

TEST(LinkCalibration, CpuCurveSpreadsEachStretchOverTheSharedCores) {
  SpinPoint small, large;
  small.bytes = 65536;
  small.stretch_seconds = 1e-3;
  small.bytes_sent = 2 * 65536;
  large.bytes = 4e6;
  large.stretch_seconds = 4e-3;
  large.bytes_sent = 8e6;
  const std::vector<CpuCostPoint> curve = FitCpuCurve({small, large}, 2);
  ASSERT_EQ(curve.size(), 2u);
  EXPECT_NEAR(curve[0].cpu, 1e-3 * 2 / (2 * 65536.0), 1e-18);
  EXPECT_NEAR(curve[1].cpu, 4e-3 * 2 / 8e6, 1e-18);
}

// --calibrate's model column is the prediction, curves included.
TEST(LinkCalibration, ModelColumnIsWhatScalePredicts) {
  LinkCalibration calibration;
  calibration.ranks = 2;
  calibration.link.alpha = 1e-5;
  calibration.link.beta = 1e-9;
  calibration.link.beta_curve = {{1e5, 4e-9}, {1e7, 1e-9}};
  calibration.ping_pong = {{1e6, 0, 0}};
  calibration.allreduce = {{1e6, 0, 0}};
  calibration.broadcast = {{1e6, 0, 0}};
  PredictCalibrationPoints(&calibration);
  const LinkCost& link = calibration.link;
  EXPECT_NEAR(calibration.ping_pong[0].predicted, 1e-5 + 1e6 * 2.5e-9, 1e-12);
  // The allreduce of 1 MB on 2 ranks puts 1 MB on the busiest link: beta 2.5e-9 there.
  EXPECT_NEAR(
      calibration.allreduce[0].predicted,
      CollectiveCostOf(CollectiveLibrary::kOpenMpi, CollectiveKind::kAllreduce, 1e6, 2, link, 1e6)
          .seconds,
      1e-15);
  EXPECT_NEAR(calibration.allreduce[0].predicted, 2 * (1e-5 + 5e5 * 2.5e-9), 1e-12);
  EXPECT_NEAR(calibration.broadcast[0].predicted, 1e-5 + 1e6 * 2.5e-9, 1e-12);
}

}  // namespace
}  // namespace doppio
