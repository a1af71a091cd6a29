// Gradient compression without an MPI job: the --grad_compression values, the 16-bit
// conversions, and each method's compressor on the one-rank communicator (what one rank
// sends and keeps: top-k's choice and error feedback, PowerSGD's approximation and
// residual). The sums over several ranks are in compression_mpitest.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "doppio/parallel/cast_compressor.hpp"
#include "doppio/parallel/gradient_sync.hpp"
#include "doppio/parallel/powersgd_compressor.hpp"
#include "doppio/parallel/topk_compressor.hpp"
#include "doppio/util/half.hpp"
#include "doppio/util/rng.hpp"
#include "test_util.hpp"

namespace doppio {
namespace {

std::vector<float> Gaussian(std::size_t count, std::uint64_t seed) {
  Rng rng(seed);
  std::vector<float> values(count);
  for (float& value : values) value = static_cast<float>(rng.Gaussian(0, 1));
  return values;
}

TEST(GradCompressionTest, ParsesEveryMethod) {
  EXPECT_FALSE(ParseGradCompression("none").active());
  EXPECT_EQ(ParseGradCompression("fp16").method, GradCompression::Method::kFp16);
  EXPECT_EQ(ParseGradCompression("bf16").method, GradCompression::Method::kBf16);
  const GradCompression topk = ParseGradCompression("topk:0.01");
  EXPECT_EQ(topk.method, GradCompression::Method::kTopK);
  EXPECT_DOUBLE_EQ(topk.fraction, 0.01);
  EXPECT_TRUE(topk.stateful());
  EXPECT_EQ(ParseGradCompression("topk:1").fraction, 1.0);
  const GradCompression powersgd = ParseGradCompression("powersgd:4");
  EXPECT_EQ(powersgd.method, GradCompression::Method::kPowerSgd);
  EXPECT_EQ(powersgd.rank, 4);
  EXPECT_EQ(powersgd.text, "powersgd:4");
  EXPECT_FALSE(ParseGradCompression("fp16").stateful());
  // One text for each method, however it was written: snapshots compare them.
  for (const char* same : {"topk:0.01", "topk:.01", "topk:1e-2", "topk:0.010"}) {
    EXPECT_EQ(ParseGradCompression(same).text, "topk:0.01") << same;
  }
  EXPECT_EQ(ParseGradCompression("topk:0.123456789").text, "topk:0.123456789");
  EXPECT_EQ(ParseGradCompression("topk:1.0").text, "topk:1");
  EXPECT_EQ(ParseGradCompression("powersgd:04").text, "powersgd:4");
  EXPECT_EQ(ParseGradCompression("none").text, "none");
  EXPECT_EQ(ParseGradCompression("bf16").text, "bf16");
}

TEST(GradCompressionTest, BadValuesAreErrorsNamingTheFlag) {
  for (const char* value :
       {"topk:0", "topk:1.5", "topk:-0.1", "topk:abc", "topk:", "topk", "topk:nan", "powersgd:0",
        "powersgd:-2", "powersgd:1.5", "powersgd", "gzip", "gzip:3", "fp16:2", ""}) {
    ExpectError([&] { ParseGradCompression(value); },
                {"--grad_compression", value[0] ? value : "must be"});
  }
  ExpectError([] { ParseGradCompression("topk:1.5"); }, {"(0, 1]"});
  ExpectError([] { ParseGradCompression("powersgd:0"); }, {">= 1"});
}

TEST(GradCompressionTest, HalfConversionRoundsToNearestEven) {
  EXPECT_EQ(FloatToHalf(1.0f), 0x3c00);
  EXPECT_EQ(FloatToHalf(-2.0f), 0xc000);
  EXPECT_EQ(FloatToHalf(65504.0f), 0x7bff);
  EXPECT_EQ(FloatToHalf(1e6f), 0x7c00);                   // beyond the range: infinity
  EXPECT_EQ(FloatToHalf(std::ldexp(1.0f, -24)), 0x0001);  // the smallest subnormal
  EXPECT_EQ(FloatToHalf(std::ldexp(1.0f, -26)), 0x0000);
  // 1 + 2^-11 lies halfway between 1 and 1 + 2^-10: to the even one, 1.
  EXPECT_EQ(FloatToHalf(1.0f + std::ldexp(1.0f, -11)), 0x3c00);
  EXPECT_EQ(FloatToHalf(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);
  EXPECT_TRUE(std::isnan(HalfToFloat(FloatToHalf(std::nanf("")))));
  EXPECT_EQ(HalfToFloat(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(HalfToFloat(0x83ff), -1023 * std::ldexp(1.0f, -24));
  EXPECT_TRUE(std::signbit(HalfToFloat(0x8000)));
  EXPECT_EQ(HalfToFloat(0x3555), 0.333251953125f);
  for (float value : Gaussian(1000, 7)) {
    const float back = HalfToFloat(FloatToHalf(value));
    EXPECT_LE(std::fabs(back - value), std::ldexp(std::fabs(value), -11) + 1e-7f) << value;
  }
  EXPECT_EQ(FloatToBfloat16(1.0f), 0x3f80);
  EXPECT_EQ(Bfloat16ToFloat(0xc040), -3.0f);
  EXPECT_EQ(FloatToBfloat16(1.0f + std::ldexp(1.0f, -8)), 0x3f80);  // halfway, to even
  EXPECT_EQ(FloatToBfloat16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82);
  EXPECT_TRUE(std::isnan(Bfloat16ToFloat(FloatToBfloat16(std::nanf("")))));
}

TEST(GradCompressionTest, CastCompressorSendsHalfTheBytes) {
  SelfCommunicator comm;
  const std::vector<float> gradient = Gaussian(301, 1);
  for (bool bfloat16 : {false, true}) {
    CastCompressor<float> compressor(gradient.size(), bfloat16);
    std::vector<float> bucket = gradient;
    compressor.Start(bucket.data(), &comm, "test");
    compressor.Wait();
    compressor.Decompress(bucket.data());
    EXPECT_EQ(compressor.bytes_sent(), gradient.size() * 2);
    const float bound = std::ldexp(1.0f, bfloat16 ? -8 : -11);
    for (std::size_t i = 0; i < gradient.size(); ++i) {
      EXPECT_LE(std::fabs(bucket[i] - gradient[i]), bound * std::fabs(gradient[i])) << i;
    }
    EXPECT_TRUE(compressor.residual().empty());
  }
}

TEST(GradCompressionTest, TopKSendsTheLargestAndKeepsTheRest) {
  SelfCommunicator comm;
  const std::size_t count = 200;
  TopKCompressor<float> compressor(count, 0.05);
  EXPECT_EQ(compressor.k(), 10u);
  std::vector<float> owed(count, 0.f);
  for (int step = 0; step < 5; ++step) {
    const std::vector<float> gradient = Gaussian(count, 10 + step);
    std::vector<float> bucket = gradient;
    compressor.Start(bucket.data(), &comm, "test");
    compressor.Wait();
    compressor.Decompress(bucket.data());
    EXPECT_EQ(compressor.bytes_sent(), 10 * (sizeof(std::int32_t) + sizeof(float)));
    const std::vector<float>& residual = compressor.residual();
    // Error feedback conserves the gradient: what was sent plus what is still owed is every
    // gradient so far, entry by entry.
    float smallest_sent = INFINITY, largest_kept = 0;
    int sent = 0;
    for (std::size_t i = 0; i < count; ++i) {
      owed[i] += gradient[i];
      EXPECT_EQ(bucket[i] + residual[i], owed[i]) << "step " << step << " entry " << i;
      // An entry is either sent whole or kept whole.
      EXPECT_TRUE(bucket[i] == 0 || residual[i] == 0) << i;
      if (bucket[i] != 0) {
        ++sent;
        smallest_sent = std::min(smallest_sent, std::fabs(bucket[i]));
      }
      largest_kept = std::max(largest_kept, std::fabs(residual[i]));
      owed[i] = residual[i];
    }
    EXPECT_EQ(sent, 10);
    EXPECT_GE(smallest_sent, largest_kept) << "step " << step;
  }
}

TEST(GradCompressionTest, TopKOfFractionOneSendsEverything) {
  SelfCommunicator comm;
  const std::vector<float> gradient = Gaussian(77, 3);
  TopKCompressor<float> compressor(gradient.size(), 1.0);
  std::vector<float> bucket = gradient;
  compressor.Start(bucket.data(), &comm, "test");
  compressor.Wait();
  compressor.Decompress(bucket.data());
  EXPECT_EQ(bucket, gradient);
  EXPECT_EQ(compressor.residual(), std::vector<float>(gradient.size(), 0.f));
}

TEST(GradCompressionTest, TopKMomentumCorrectionSendsVelocitiesTheSolverRecovers) {
  SelfCommunicator comm;
  const std::size_t count = 200;
  const double momentum = 0.9;
  TopKCompressor<double> compressor(count, 0.05, nullptr, momentum);
  ASSERT_TRUE(compressor.corrects_momentum());
  // Each rank's velocity, the solver's history over the buckets it receives, and every
  // velocity so far less what was sent.
  std::vector<double> velocity(count, 0), history(count, 0), owed(count, 0);
  for (int step = 0; step < 8; ++step) {
    const std::vector<float> gradient = Gaussian(count, 30 + step);
    std::vector<double> bucket(gradient.begin(), gradient.end());
    compressor.Start(bucket.data(), &comm, "test");
    compressor.Wait();
    compressor.Decompress(bucket.data());
    const std::vector<double> state = compressor.residual();
    const std::vector<double> velocities = compressor.velocity();
    ASSERT_EQ(state.size(), count);
    ASSERT_EQ(velocities.size(), count);
    const std::vector<double> last_step = compressor.shared_state();
    int sent = 0;
    for (std::size_t i = 0; i < count; ++i) {
      velocity[i] = momentum * velocity[i] + gradient[i];
      // Not masked: the velocity of an entry sent goes on.
      EXPECT_EQ(velocities[i], velocity[i]) << "step " << step << " entry " << i;
      // h <- momentum x h + bucket gives back the step sent (one rank: the mean is the sum).
      history[i] = momentum * history[i] + bucket[i];
      EXPECT_NEAR(history[i], last_step[i], 1e-9) << "step " << step << " entry " << i;
      // The velocities are conserved: sent plus still owed.
      owed[i] += velocity[i];
      EXPECT_NEAR(last_step[i] + state[i], owed[i], 1e-9) << "step " << step << " entry " << i;
      EXPECT_TRUE(last_step[i] == 0 || state[i] == 0) << i;
      if (last_step[i] != 0) ++sent;
      owed[i] = state[i];
    }
    EXPECT_EQ(sent, 10) << "step " << step;
  }
  // The state of a snapshot: a compressor given it continues identically.
  TopKCompressor<double> resumed(count, 0.05, nullptr, momentum);
  resumed.set_residual(compressor.residual());
  resumed.set_velocity(compressor.velocity());
  resumed.set_shared_state(compressor.shared_state());
  const std::vector<float> next = Gaussian(count, 99);
  std::vector<double> a(next.begin(), next.end()), b = a;
  for (auto pair : {std::make_pair(&compressor, &a), std::make_pair(&resumed, &b)}) {
    pair.first->Start(pair.second->data(), &comm, "test");
    pair.first->Wait();
    pair.first->Decompress(pair.second->data());
  }
  EXPECT_EQ(a, b);
}

TEST(GradCompressionTest, TopKOfFractionOneNeedsNoMomentumCorrection) {
  SelfCommunicator comm;
  const std::vector<float> gradient = Gaussian(77, 4);
  TopKCompressor<float> compressor(gradient.size(), 1.0, nullptr, 0.9);
  EXPECT_FALSE(compressor.corrects_momentum());
  std::vector<float> bucket = gradient;
  compressor.Start(bucket.data(), &comm, "test");
  compressor.Wait();
  compressor.Decompress(bucket.data());
  EXPECT_EQ(bucket, gradient);
  EXPECT_EQ(compressor.residual().size(), gradient.size());
  EXPECT_TRUE(compressor.shared_state().empty());
}

// A bucket of a 6 x 10 matrix, a vector of 5 and a 4 x 3 x 2 x 2 tensor.
std::vector<BucketParam> MixedBucket() { return {{0, 60, 6}, {60, 5, 0}, {65, 48, 4}}; }

TEST(GradCompressionTest, PowerSgdOfFullRankReproducesTheGradient) {
  SelfCommunicator comm;
  const std::vector<float> gradient = Gaussian(113, 4);
  // Rank 6 >= min(rows, cols) of both matrices.
  PowerSgdCompressor<float> compressor(gradient.size(), MixedBucket(), 6, 99);
  std::vector<float> bucket = gradient;
  compressor.Start(bucket.data(), &comm, "test");
  compressor.Continue();
  compressor.Wait();
  compressor.Decompress(bucket.data());
  for (std::size_t i = 0; i < gradient.size(); ++i) {
    EXPECT_NEAR(bucket[i], gradient[i], 1e-5 + 1e-5 * std::fabs(gradient[i])) << i;
  }
  // P (6x6 + 4x4) and the vector, then Q (10x6 + 12x4), in floats.
  EXPECT_EQ(compressor.bytes_sent(), (36 + 16 + 5 + 60 + 48) * sizeof(float));
}

TEST(GradCompressionTest, PowerSgdConservesTheGradientAndSendsTheVectorsAsTheyAre) {
  SelfCommunicator comm;
  PowerSgdCompressor<float> compressor(113, MixedBucket(), 1, 99);
  std::vector<float> owed(113, 0.f);
  for (int step = 0; step < 4; ++step) {
    const std::vector<float> gradient = Gaussian(113, 20 + step);
    std::vector<float> bucket = gradient;
    compressor.Start(bucket.data(), &comm, "test");
    compressor.Continue();
    compressor.Wait();
    compressor.Decompress(bucket.data());
    const std::vector<float>& residual = compressor.residual();
    double approximation_error = 0;
    for (std::size_t i = 0; i < bucket.size(); ++i) {
      owed[i] += gradient[i];
      EXPECT_NEAR(bucket[i] + residual[i], owed[i], 1e-5) << "step " << step << " entry " << i;
      approximation_error += std::fabs(residual[i]);
      owed[i] = residual[i];
    }
    // Rank 1 leaves something behind; the vector nothing.
    EXPECT_GT(approximation_error, 0.1);
    for (int i = 60; i < 65; ++i) EXPECT_EQ(bucket[i], gradient[i]);
  }
}

TEST(GradCompressionTest, PowerSgdOfRankOneCapturesARankOneMatrixExactly) {
  SelfCommunicator comm;
  const std::vector<float> u = Gaussian(6, 5), v = Gaussian(10, 6);
  std::vector<float> gradient(60);
  for (int i = 0; i < 6; ++i) {
    for (int j = 0; j < 10; ++j) gradient[i * 10 + j] = u[i] * v[j];
  }
  PowerSgdCompressor<float> compressor(60, {{0, 60, 6}}, 1, 3);
  std::vector<float> bucket = gradient;
  compressor.Start(bucket.data(), &comm, "test");
  compressor.Continue();
  compressor.Wait();
  compressor.Decompress(bucket.data());
  for (int i = 0; i < 60; ++i) EXPECT_NEAR(bucket[i], gradient[i], 1e-5) << i;
}

TEST(GradCompressionTest, OrthogonaliseMakesOrthonormalColumns) {
  std::vector<float> matrix = Gaussian(8 * 3, 8);
  PowerSgdCompressor<float>::Orthogonalise(matrix.data(), 8, 3);
  for (int a = 0; a < 3; ++a) {
    for (int b = 0; b < 3; ++b) {
      double dot = 0;
      for (int r = 0; r < 8; ++r) dot += double(matrix[r * 3 + a]) * matrix[r * 3 + b];
      EXPECT_NEAR(dot, a == b ? 1.0 : 0.0, 1e-6) << a << ", " << b;
    }
  }
  // A column in the span of those before it vanishes instead of becoming noise.
  std::vector<float> dependent = {1, 2, 2, 4, 3, 6};
  PowerSgdCompressor<float>::Orthogonalise(dependent.data(), 3, 2);
  for (int r = 0; r < 3; ++r) EXPECT_NEAR(dependent[r * 2 + 1], 0.f, 1e-3);
}

TEST(GradCompressionTest, ReduceBroadcastAndANegativeStartIterAreRefused) {
  NetParameter param = ParseText<NetParameter>(
      "name: 'n' state { phase: TRAIN } "
      "layer { name: 'in' type: 'Input' top: 'x' input_param { shape { dim: 2 dim: 3 } } } "
      "layer { name: 'ip' type: 'InnerProduct' bottom: 'x' top: 'y' "
      "  inner_product_param { num_output: 2 } } ");
  Net<float> net(param);
  SelfCommunicator comm;
  ExpectError(
      [&] {
        GradientSync<float>(&net, &comm, SyncMode::kReduceBroadcast, 25, 1, nullptr,
                            ParseGradCompression("fp16"));
      },
      {"--grad_compression=fp16", "--sync=reduce_bcast"});
  ExpectError(
      [&] {
        GradientSync<float>(&net, &comm, SyncMode::kOverlap, 25, 1, nullptr,
                            ParseGradCompression("topk:0.1"), -1);
      },
      {"--compression_start_iter"});
  // One rank sends nothing: nothing to compress.
  GradientSync<float> sync(&net, &comm, SyncMode::kOverlap, 25, 1, nullptr,
                           ParseGradCompression("powersgd:2"));
  EXPECT_FALSE(sync.compressing());
  EXPECT_TRUE(sync.CompressionState(GradientSync<float>::StateField::kResidual).empty());
}

}  // namespace
}  // namespace doppio
