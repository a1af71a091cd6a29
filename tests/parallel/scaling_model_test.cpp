// The cost model of `doppio scale` against hand-computed cases: the collectives' alpha-beta
// costs, the replay of one iteration (one bucket, several overlapping backward, one
// communication stream, blocking against overlap, one rank) and the bucket plan taken from
// GradientSync.
#include <gtest/gtest.h>

#include <cmath>

#include "doppio/parallel/scaling_model.hpp"
#include "test_util.hpp"

namespace doppio {
namespace {

LinkCost Link(double alpha, double beta, double gamma) {
  LinkCost link;
  link.alpha = alpha;
  link.beta = beta;
  link.gamma = gamma;
  return link;
}

TEST(ScalingModel, RingAllreduceMovesTwiceTheShareOfEveryOtherRank) {
  // 4 ranks, 1 MB: 6 steps of alpha + 250 KB, 3 reductions of 250 KB.
  const LinkCost link = Link(1e-5, 1e-9, 2e-10);
  EXPECT_NEAR(RingAllreduceSeconds(1e6, 4, link), 6 * (1e-5 + 2.5e5 * 1e-9) + 3 * 2.5e5 * 2e-10,
              1e-12);
  EXPECT_EQ(RingAllreduceSeconds(1e6, 1, link), 0);
  EXPECT_NEAR(CollectiveSeconds(CollectiveLibrary::kNccl, CollectiveKind::kAllreduce, 1e6, 4, link),
              RingAllreduceSeconds(1e6, 4, link), 1e-15);
}

TEST(ScalingModel, OpenMpiAllreduceIsTheRingMpiEngineChooses) {
  const double n = 1e6, a = 1e-5, b = 1e-9, g = 2e-10;
  const LinkCost link = Link(a, b, g);
  // 2 ranks: each sends half and sums the half it receives, then sends its sum: the buffer
  // crosses each link once in each direction, not twice (libnbc's binomial tree).
  EXPECT_NEAR(
      CollectiveSeconds(CollectiveLibrary::kOpenMpi, CollectiveKind::kAllreduce, n, 2, link),
      2 * a + n * b + n / 2 * g, 1e-12);
  // 4 ranks: 6 rounds of a quarter, 3 sums of a quarter.
  EXPECT_NEAR(
      CollectiveSeconds(CollectiveLibrary::kOpenMpi, CollectiveKind::kAllreduce, n, 4, link),
      6 * (a + n / 4 * b) + 3 * n / 4 * g, 1e-12);
  EXPECT_EQ(CollectiveSeconds(CollectiveLibrary::kOpenMpi, CollectiveKind::kAllreduce, n, 1, link),
            0);
}

TEST(ScalingModel, OpenMpiRootedCollectivesPipelineTheirPieces) {
  const double a = 1e-5, b = 1e-9, g = 2e-10;
  const LinkCost link = Link(a, b, g);
  // Reduce on 2 ranks, 64 KB: a chain of eight 8 KB fragments, sent one after the other;
  // on 3 ranks the pipeline takes one more hop and one fragment's step longer to fill.
  EXPECT_NEAR(
      CollectiveSeconds(CollectiveLibrary::kOpenMpi, CollectiveKind::kReduce, 65536, 2, link),
      a + 8 * 8192 * (b + g), 1e-12);
  EXPECT_NEAR(
      CollectiveSeconds(CollectiveLibrary::kOpenMpi, CollectiveKind::kReduce, 65536, 3, link),
      2 * a + 9 * 8192 * (b + g), 1e-12);
  // Broadcast on 4 ranks, 8 MB: two 4 MB pieces, each sent by the root to 3 ranks at once;
  // the second follows the first on the root's link.
  const double piece = 4 << 20;
  EXPECT_NEAR(CollectiveSeconds(CollectiveLibrary::kOpenMpi, CollectiveKind::kBroadcast, 2 * piece,
                                4, link),
              a + 6 * piece * b, 1e-12);
  // Beyond 4 ranks both are binomial trees: 8 ranks, one small piece, 3 levels of reduce.
  EXPECT_NEAR(
      CollectiveSeconds(CollectiveLibrary::kOpenMpi, CollectiveKind::kReduce, 1000, 8, link),
      3 * (a + 1000 * (b + g)), 1e-12);
}

TEST(ScalingModel, BroadcastFactorScalesOnlyTheBroadcastsWire) {
  const double a = 1e-5, b = 1e-9, g = 2e-10, piece = 4 << 20;
  LinkCost link = Link(a, b, g);
  link.broadcast_factor = 0.5;
  // The linear broadcast of two pieces on 4 ranks: 6 pieces' bytes out of the root at half
  // of beta; alpha stays.
  EXPECT_NEAR(CollectiveSeconds(CollectiveLibrary::kOpenMpi, CollectiveKind::kBroadcast, 2 * piece,
                                4, link),
              a + 3 * piece * b, 1e-12);
  // 2 ranks: the chain reduce of 64 KB as without the factor.
  EXPECT_NEAR(
      CollectiveSeconds(CollectiveLibrary::kOpenMpi, CollectiveKind::kReduce, 65536, 2, link),
      a + 8 * 8192 * (b + g), 1e-12);
}

TEST(ScalingModel, BusiestLinkCarriesWhatItsCollectiveSendsThere) {
  const double n = 1e6;
  // The ring: 2(N-1) steps of n/N on every link.
  EXPECT_EQ(BusiestLinkBytes(CollectiveLibrary::kOpenMpi, CollectiveKind::kAllreduce, n, 4), 1.5e6);
  EXPECT_EQ(BusiestLinkBytes(CollectiveLibrary::kNccl, CollectiveKind::kAllreduce, n, 2), n);
  // Open MPI up to 4 ranks: a chain reduce (n on each link), a linear broadcast (N-1 copies out
  // of the root); beyond, binomial trees (log2 N rounds through the root's link).
  EXPECT_EQ(BusiestLinkBytes(CollectiveLibrary::kOpenMpi, CollectiveKind::kReduce, n, 4), n);
  EXPECT_EQ(BusiestLinkBytes(CollectiveLibrary::kOpenMpi, CollectiveKind::kBroadcast, n, 4), 3 * n);
  EXPECT_EQ(BusiestLinkBytes(CollectiveLibrary::kOpenMpi, CollectiveKind::kReduce, n, 8), 3 * n);
  EXPECT_EQ(BusiestLinkBytes(CollectiveLibrary::kOpenMpi, CollectiveKind::kBroadcast, n, 16),
            4 * n);
  // NCCL's chains: n on every link.
  EXPECT_EQ(BusiestLinkBytes(CollectiveLibrary::kNccl, CollectiveKind::kBroadcast, n, 8), n);
  EXPECT_EQ(BusiestLinkBytes(CollectiveLibrary::kNccl, CollectiveKind::kAllreduce, n, 1), 0);
}

// Three layers (ids 0, 1, 2): forward 10 ms each; backward runs 2, 1, 0 taking 10, 20 and
// 30 ms, so it finishes layer 2 at 40 ms, layer 1 at 60 ms and layer 0 at 90 ms; the
// update takes 5 ms. Compute: 95 ms.
IterationProfile ThreeLayers(const std::vector<std::pair<double, int>>& buckets_ms) {
  IterationProfile profile;
  profile.forward = {0.010, 0.010, 0.010};
  profile.backward = {0.030, 0.020, 0.010};
  profile.update = 0.005;
  // NCCL on 2 ranks with alpha = gamma = 0: a bucket of n bytes takes n * beta; with beta
  // 1e-9 s a millisecond is 1e6 bytes.
  for (const auto& bucket : buckets_ms) {
    ModelBucket b;
    b.gradient_bytes = b.wire_bytes = bucket.first * 1e6;
    b.ready_layer = bucket.second;
    profile.buckets.push_back(b);
    profile.blocking_bytes += b.gradient_bytes;
    profile.weight_bytes += b.gradient_bytes;
  }
  return profile;
}

IterationPrediction Predict(const IterationProfile& profile, SyncMode mode, int ranks = 2) {
  return PredictIteration(profile, mode, ranks, CollectiveLibrary::kNccl, Link(0, 1e-9, 0));
}

// The iteration on NCCL's collectives over `link`.
double NcclIteration(const IterationProfile& profile, SyncMode mode, int ranks,
                     const LinkCost& link) {
  return PredictIteration(profile, mode, ranks, CollectiveLibrary::kNccl, link).iteration;
}

// One choice of algorithm for Open MPI's rooted collectives, which the cost and the busiest
// link's bytes both follow: a reduce of a piece under 64 KB is a binomial tree even on 2-4
// ranks (the busiest link then carries log2 N copies, not one).
TEST(ScalingModel, RootedAlgorithmIsChosenOnceForCostAndLink) {
  EXPECT_EQ(OpenMpiRootedAlgorithm(CollectiveKind::kReduce, 65536, 4), RootedAlgorithm::kChain);
  EXPECT_EQ(OpenMpiRootedAlgorithm(CollectiveKind::kReduce, 65535, 4),
            RootedAlgorithm::kBinomialTree);
  EXPECT_EQ(OpenMpiRootedAlgorithm(CollectiveKind::kBroadcast, 100, 4), RootedAlgorithm::kLinear);
  EXPECT_EQ(OpenMpiRootedAlgorithm(CollectiveKind::kReduce, 1e6, 5),
            RootedAlgorithm::kBinomialTree);
  EXPECT_EQ(OpenMpiRootedAlgorithm(CollectiveKind::kBroadcast, 1e6, 5),
            RootedAlgorithm::kBinomialTree);
  EXPECT_EQ(BusiestLinkBytes(CollectiveLibrary::kOpenMpi, CollectiveKind::kReduce, 1000, 4), 2000);
  EXPECT_EQ(BusiestLinkBytes(CollectiveLibrary::kOpenMpi, CollectiveKind::kReduce, 1000, 2), 1000);
  // A reduce of 4 MB and 40 KB: a 4 MB piece (a chain) and a 40 KB one (a tree); the choice
  // is the pieces' (of equal size, 2 MB each): chains.
  const double bytes = 4.0 * (1 << 20) + 40000;
  EXPECT_EQ(BusiestLinkBytes(CollectiveLibrary::kOpenMpi, CollectiveKind::kReduce, bytes, 4),
            bytes);
  // And the cost of a small reduce is the tree's: 2 rounds of alpha + n (beta + gamma) on 4.
  const LinkCost link = Link(1e-5, 1e-9, 1e-10);
  EXPECT_NEAR(
      CollectiveSeconds(CollectiveLibrary::kOpenMpi, CollectiveKind::kReduce, 1000, 4, link),
      2 * (1e-5 + 1000 * 1.1e-9), 1e-15);
}

// The one function that applies a link's curves: beta at the bytes carried in a row, the CPU
// cost at the collective's own size.
TEST(ScalingModel, CollectiveCostAppliesBothCurves) {
  LinkCost link = Link(1e-5, 1e-9, 0);
  link.beta_curve = {{1e5, 4e-9}, {1e7, 1e-9}};
  link.cpu_curve = {{1e5, 3e-9}, {1e7, 1e-9}};
  link.cpu = 99;  // the curve, not this, is used
  link.shared_cores = 2;
  const double n = 1e6;
  // 1e6 lies half-way (in log) between 1e5 and 1e7: beta 2.5e-9, cpu 2e-9.
  const CollectiveCost alone =
      CollectiveCostOf(CollectiveLibrary::kOpenMpi, CollectiveKind::kAllreduce, n, 2, link, n);
  EXPECT_NEAR(alone.seconds, 2 * (1e-5 + 5e5 * 2.5e-9), 1e-12);
  EXPECT_NEAR(alone.core_seconds, 2 * n * 2e-9, 1e-12);
  // Carried in a longer burst: the curve's beta there, the same CPU cost.
  const CollectiveCost burst =
      CollectiveCostOf(CollectiveLibrary::kOpenMpi, CollectiveKind::kAllreduce, n, 2, link, 1e7);
  EXPECT_NEAR(burst.seconds, 2 * (1e-5 + 5e5 * 1e-9), 1e-12);
  EXPECT_NEAR(burst.core_seconds, alone.core_seconds, 1e-15);
  // Without curves it is CollectiveSeconds at the flat beta, and cpu per byte sent.
  LinkCost flat = Link(1e-5, 1e-9, 0);
  flat.cpu = 1e-9;
  const CollectiveCost plain =
      CollectiveCostOf(CollectiveLibrary::kNccl, CollectiveKind::kBroadcast, n, 3, flat, 123);
  EXPECT_NEAR(plain.seconds,
              CollectiveSeconds(CollectiveLibrary::kNccl, CollectiveKind::kBroadcast, n, 3, flat),
              1e-15);
  EXPECT_NEAR(plain.core_seconds, 2 * n * 1e-9, 1e-15);
}

TEST(ScalingModel, OneBucketWaitsForTheWholeBackward) {
  const IterationPrediction p = Predict(ThreeLayers({{20, 0}}), SyncMode::kOverlap);
  EXPECT_NEAR(p.compute, 0.095, 1e-12);
  // Released at 90 ms, done at 110, update to 115.
  EXPECT_NEAR(p.iteration, 0.115, 1e-12);
  EXPECT_NEAR(p.exposed, 0.020, 1e-12);
  EXPECT_NEAR(p.comm, 0.020, 1e-12);
}

TEST(ScalingModel, BucketsOverlapTheRestOfBackward) {
  // 40-50, 60-90, 90-95: only the last bucket's 5 ms are exposed.
  const IterationPrediction p =
      Predict(ThreeLayers({{10, 2}, {30, 1}, {5, 0}}), SyncMode::kOverlap);
  EXPECT_NEAR(p.iteration, 0.100, 1e-12);
  EXPECT_NEAR(p.exposed, 0.005, 1e-12);
  EXPECT_NEAR(p.comm, 0.045, 1e-12);
}

TEST(ScalingModel, OneStreamCarriesTheBucketsOneAfterTheOther) {
  // 40-70; the second, released at 60, waits for the stream: 70-95; the third 95-100.
  const IterationPrediction p =
      Predict(ThreeLayers({{30, 2}, {25, 1}, {5, 0}}), SyncMode::kOverlap);
  EXPECT_NEAR(p.iteration, 0.105, 1e-12);
  EXPECT_NEAR(p.exposed, 0.010, 1e-12);
}

TEST(ScalingModel, BlockingExposesAllOfItAndOverlapLess) {
  const IterationProfile profile = ThreeLayers({{10, 2}, {30, 1}, {5, 0}});
  // One allreduce of the 45 ms of gradients after backward.
  const IterationPrediction blocking = Predict(profile, SyncMode::kBlocking);
  EXPECT_NEAR(blocking.iteration, 0.090 + 0.045 + 0.005, 1e-12);
  EXPECT_NEAR(blocking.exposed, 0.045, 1e-12);
  EXPECT_LT(Predict(profile, SyncMode::kOverlap).iteration, blocking.iteration);
  // reduce_bcast: the reduces overlap as the allreduces do (n * beta on NCCL's chain), then
  // the weights (45 ms) are broadcast after the update.
  const IterationPrediction reduce_bcast = Predict(profile, SyncMode::kReduceBroadcast);
  EXPECT_NEAR(reduce_bcast.iteration, 0.100 + 0.045, 1e-12);
  // Open MPI's ring on 2 ranks: half the gradients each way, twice (as NCCL's).
  const IterationPrediction mpi = PredictIteration(profile, SyncMode::kBlocking, 2,
                                                   CollectiveLibrary::kOpenMpi, Link(0, 1e-9, 0));
  EXPECT_NEAR(mpi.exposed, 0.045, 1e-12);
}

TEST(ScalingModel, OneRankCommunicatesNothing) {
  const IterationProfile profile = ThreeLayers({{10, 2}, {30, 1}, {5, 0}});
  for (SyncMode mode : {SyncMode::kOverlap, SyncMode::kReduceBroadcast, SyncMode::kBlocking}) {
    const IterationPrediction p = Predict(profile, mode, 1);
    EXPECT_NEAR(p.iteration, 0.095, 1e-12) << SyncModeName(mode);
    EXPECT_EQ(p.exposed, 0) << SyncModeName(mode);
    EXPECT_EQ(p.comm, 0) << SyncModeName(mode);
  }
  EXPECT_THROW(Predict(profile, SyncMode::kOverlap, 0), Error);
}

TEST(ScalingModel, CollectivesSendTheirBytesFromEveryRankButTheRoot) {
  // The ring: every rank sends 2(N-1)/N of the buffer; a reduce or broadcast crosses N-1 links.
  EXPECT_EQ(CollectiveBytesSent(CollectiveKind::kAllreduce, 1e6, 4), 6e6);
  EXPECT_EQ(CollectiveBytesSent(CollectiveKind::kReduce, 1e6, 4), 3e6);
  EXPECT_EQ(CollectiveBytesSent(CollectiveKind::kBroadcast, 1e6, 2), 1e6);
  EXPECT_EQ(CollectiveBytesSent(CollectiveKind::kAllreduce, 1e6, 1), 0);
}

TEST(ScalingModel, SharedCoresCannotHideCpuBoundCommunication) {
  // The three layers, one bucket of 20 MB released at 40 ms, on a fast wire (1 ms a MB:
  // done at 60 ms, hidden behind backward): on the wire alone the iteration is the compute.
  const IterationProfile profile = ThreeLayers({{20, 2}});
  LinkCost link = Link(0, 1e-9, 0);
  link.cpu = 2e-9;  // 2 core-ns per byte sent
  EXPECT_NEAR(NcclIteration(profile, SyncMode::kOverlap, 2, link), 0.095, 1e-12);
  // Two ranks on 2 shared cores: the ring sends 2 x 20 MB, 80 core-ms, which the cores must
  // find beside 2 x 95 ms of compute: (190 + 80) / 2 = 135 ms.
  link.shared_cores = 2;
  const IterationPrediction two =
      PredictIteration(profile, SyncMode::kOverlap, 2, CollectiveLibrary::kNccl, link);
  EXPECT_NEAR(two.comm_cpu, 0.080, 1e-12);
  EXPECT_NEAR(two.iteration, 0.135, 1e-12);
  EXPECT_NEAR(two.exposed, 0.040, 1e-12);
  // Four ranks: the compute (95 ms, one rank's with all four running) already shares the 2
  // cores; the ring sends 6 x 20 MB, 240 core-ms: 95 + 240 / 2 = 215 ms.
  EXPECT_NEAR(NcclIteration(profile, SyncMode::kOverlap, 4, link), 0.215, 1e-12);
  // Blocking on 2 ranks: the wire's 90 + 20 + 5 = 115 ms is less than the cores' 135.
  EXPECT_NEAR(NcclIteration(profile, SyncMode::kBlocking, 2, link), 0.135, 1e-12);
  // Where the wire is slower than the cores (10 ms a MB: a 200 ms allreduce), it sets the
  // pace: the 50 ms of it beside backward (to 90) take a quarter of its 80 core-ms, 10 ms,
  // from backward and from the allreduce: 40 + 200 + 10 + 5.
  link.beta = 1e-8;
  EXPECT_NEAR(NcclIteration(profile, SyncMode::kOverlap, 2, link), 0.255, 1e-12);
  // One rank of 4 cores: with cores to spare, the compute alone: max(95, (95 + 0) / 4).
  link.shared_cores = 4;
  EXPECT_NEAR(NcclIteration(profile, SyncMode::kOverlap, 1, link), 0.095, 1e-12);
}

TEST(ScalingModel, SharedCoresStretchBackwardAndTheTailStaysExposed) {
  // A 10 MB bucket released at 40 ms and a 5 MB one at the end of backward; NCCL's ring on 2
  // ranks with alpha 5 ms and 1 ms a MB: 2 x (5 + 5) = 20 ms and 2 x (5 + 2.5) = 15 ms; the
  // ring sends 2 x 10 and 2 x 5 MB at 1 core-ns a byte: 20 and 10 core-ms.
  const IterationProfile profile = ThreeLayers({{10, 2}, {5, 0}});
  LinkCost link = Link(0.005, 1e-9, 0);
  link.cpu = 1e-9;
  link.shared_cores = 2;
  // Both ranks compute on both cores: the first allreduce runs inside backward (from 40) and
  // takes its 20 core-ms from it, 10 ms each: backward ends at 100, the allreduce (its 20 ms
  // and the 10 it loses to backward) at 70. The second starts at 100 with the cores to
  // itself: 100-115, then the update: 120 ms. (The cores' bound alone, (2 x 95 + 30) / 2 =
  // 110, would hide the tail behind the first one's work.)
  const IterationPrediction two =
      PredictIteration(profile, SyncMode::kOverlap, 2, CollectiveLibrary::kNccl, link);
  EXPECT_NEAR(two.comm_cpu, 0.030, 1e-12);
  EXPECT_NEAR(two.comm, 0.020 + 0.010 + 0.015, 1e-12);
  EXPECT_NEAR(two.iteration, 0.120, 1e-12);
  // With cores to spare (4 for 2 ranks) backward keeps its pace: 90 + 15 + 5 on the wire.
  link.shared_cores = 4;
  EXPECT_NEAR(NcclIteration(profile, SyncMode::kOverlap, 2, link), 0.110, 1e-12);
  // Blocking runs after backward: nothing to stretch. One allreduce of 15 MB: 2 x (5 + 7.5)
  // = 25 ms; 30 core-ms on 2 cores take 15 of them: 90 + 25 + 5.
  link.shared_cores = 2;
  EXPECT_NEAR(NcclIteration(profile, SyncMode::kBlocking, 2, link), 0.120, 1e-12);
}

TEST(ScalingModel, CpuCostFollowsTheCollectivesSize) {
  LinkCost link;
  link.cpu = 3e-9;
  // Without a curve every size costs link.cpu.
  EXPECT_EQ(CpuCostPerByte(link, 1e3), 3e-9);
  EXPECT_EQ(CpuCostPerByte(link, 1e9), 3e-9);
  // 4 core-ns a byte at 1 MB, 1 at 16 MB: 4 MB is halfway in log(bytes), 2.5; beyond the
  // ends the nearest point's (the curve replaces link.cpu).
  link.cpu_curve = {{1e6, 4e-9}, {16e6, 1e-9}};
  EXPECT_NEAR(CpuCostPerByte(link, 4e6), 2.5e-9, 1e-21);
  EXPECT_NEAR(CpuCostPerByte(link, 2e6), 4e-9 - 0.25 * 3e-9, 1e-21);
  EXPECT_EQ(CpuCostPerByte(link, 1e6), 4e-9);
  EXPECT_EQ(CpuCostPerByte(link, 5e5), 4e-9);
  EXPECT_EQ(CpuCostPerByte(link, 16e6), 1e-9);
  EXPECT_EQ(CpuCostPerByte(link, 32e6), 1e-9);
  // A third point: 64 MB at 0.5, 32 MB halfway between 16 and 64 MB.
  link.cpu_curve.push_back({64e6, 0.5e-9});
  EXPECT_NEAR(CpuCostPerByte(link, 32e6), 0.75e-9, 1e-21);
}

TEST(ScalingModel, BetaCurveChargesEachKindTheBurstOfItsIteration) {
  // The buckets of 10, 30 and 5 MB (45 MB in all), on a link that carries 45 MB in a row at
  // 0.5 ns a byte, 67.5 MB at 0.8 and 90 MB at 1.
  const IterationProfile profile = ThreeLayers({{10, 2}, {30, 1}, {5, 0}});
  LinkCost link = Link(0, 1e-9, 0);
  EXPECT_EQ(BetaPerByte(link, 45e6), 1e-9);
  link.beta_curve = {{45e6, 0.5e-9}, {67.5e6, 0.8e-9}, {90e6, 1e-9}};
  EXPECT_NEAR(BetaPerByte(link, 45e6 * std::sqrt(1.5)), 0.65e-9, 1e-21);
  // overlap, 2 ranks: the ring puts 45 MB on each link in the iteration, at 0.5: the buckets
  // take 5, 15 and 2.5 ms (40-45, 60-75, 90-92.5), the update ends at 97.5 ms (100 at 1).
  EXPECT_NEAR(NcclIteration(profile, SyncMode::kOverlap, 2, link), 0.0975, 1e-12);
  // 4 ranks: 1.5 x 45 = 67.5 MB a link, at 0.8; a ring of n takes 1.5 n beta: 12, 36 and 6 ms
  // (40-52, 60-96, 96-102), the update to 107.
  EXPECT_NEAR(NcclIteration(profile, SyncMode::kOverlap, 4, link), 0.107, 1e-12);
  // reduce_bcast, 2 ranks: the reduces carry 45 MB towards the root and the broadcast 45 MB
  // out of it, each at 0.5: reduces as the overlap's buckets (to 92.5), the update to 97.5,
  // the broadcast of 45 MB takes 22.5: 120 ms.
  EXPECT_NEAR(NcclIteration(profile, SyncMode::kReduceBroadcast, 2, link), 0.120, 1e-12);
  // blocking: one allreduce of 45 MB at 0.5 after backward: 90 + 22.5 + 5.
  EXPECT_NEAR(NcclIteration(profile, SyncMode::kBlocking, 2, link), 0.1175, 1e-12);
}

TEST(ScalingModel, SmallBucketsCostTheSharedCoresMorePerByte) {
  // A 1 MB bucket released at 40 ms and a 16 MB one at 60 ms, hidden on the wire (done at
  // 41 and 76 ms); 2 ranks on 2 shared cores at 10 core-ns a byte for 1 MB collectives and
  // 1 for 16 MB ones (17 MB, the weights' broadcast, beyond the curve: 1).
  const IterationProfile profile = ThreeLayers({{1, 2}, {16, 1}});
  LinkCost link = Link(0, 1e-9, 0);
  link.shared_cores = 2;
  link.cpu_curve = {{1e6, 10e-9}, {16e6, 1e-9}};
  // overlap: the ring sends 2 x 1 MB at 10 and 2 x 16 MB at 1: 20 + 32 = 52 core-ms, all of
  // them inside backward (40-41 and 70-86): 10 + 16 ms more of it, (190 + 52) / 2 = 121 ms.
  const IterationPrediction overlap =
      PredictIteration(profile, SyncMode::kOverlap, 2, CollectiveLibrary::kNccl, link);
  EXPECT_NEAR(overlap.comm_cpu, 0.052, 1e-12);
  EXPECT_NEAR(overlap.iteration, 0.121, 1e-12);
  // reduce_bcast: the reduces send 1 MB at 10 and 16 MB at 1, the broadcast 17 MB at 1: 10 +
  // 16 + 17 = 43 core-ms. The reduces run inside backward (40-41, then 65-81) and take 5 and 8
  // ms from it: it ends at 103, the update at 108; the broadcast follows on the wire (17 ms,
  // more than its 8.5 ms of the cores): 125 ms.
  const IterationPrediction reduce_bcast =
      PredictIteration(profile, SyncMode::kReduceBroadcast, 2, CollectiveLibrary::kNccl, link);
  EXPECT_NEAR(reduce_bcast.comm_cpu, 0.043, 1e-12);
  EXPECT_NEAR(reduce_bcast.iteration, 0.125, 1e-12);
  // blocking: one allreduce of 17 MB, 2 x 17 at 1: (190 + 34) / 2 = 112; the wire's 90 + 17 +
  // 5 is the same.
  EXPECT_NEAR(NcclIteration(profile, SyncMode::kBlocking, 2, link), 0.112, 1e-12);
  // The largest size's rate for every bucket (the calibration before the curve): 2 x 17 MB at
  // 1, (190 + 34) / 2 = 112 ms: 9 ms less for the same overlap.
  link.cpu_curve.clear();
  link.cpu = 1e-9;
  EXPECT_NEAR(NcclIteration(profile, SyncMode::kOverlap, 2, link), 0.112, 1e-12);
}

// x (2 x 10) -> ip1 (100) -> ip2 (50) -> Euclidean loss.
NetParameter TwoLayerNet() {
  return ParseText<NetParameter>(
      "name: 'two' state { phase: TRAIN } "
      "layer { name: 'in' type: 'Input' top: 'x' top: 'y' "
      "  input_param { shape { dim: 2 dim: 10 } shape { dim: 2 dim: 50 } } } "
      "layer { name: 'ip1' type: 'InnerProduct' bottom: 'x' top: 'h1' "
      "  inner_product_param { num_output: 100 } } "
      "layer { name: 'ip2' type: 'InnerProduct' bottom: 'h1' top: 'h2' "
      "  inner_product_param { num_output: 50 } } "
      "layer { name: 'loss' type: 'EuclideanLoss' bottom: 'h2' bottom: 'y' top: 'loss' } ");
}

TEST(ScalingModel, PlanTakesGradientSyncsBucketsInLaunchOrder) {
  Net<float> net(TwoLayerNet());
  const double arena = 4.0 * (10 * 100 + 100 + 100 * 50 + 50);
  // 1 byte per bucket: every parameter is a bucket of its own, ip2's released first.
  const IterationProfile each = PlanIteration(net, 1e-6);
  ASSERT_EQ(each.buckets.size(), 4u);
  EXPECT_EQ(each.buckets.front().ready_layer, 2);
  EXPECT_EQ(each.buckets.back().ready_layer, 1);
  double sum = 0;
  for (const ModelBucket& bucket : each.buckets) {
    sum += bucket.gradient_bytes;
    EXPECT_EQ(bucket.wire_bytes, bucket.gradient_bytes);
  }
  EXPECT_EQ(sum, arena);
  EXPECT_EQ(each.blocking_bytes, arena);
  EXPECT_EQ(each.weight_bytes, arena);
  EXPECT_EQ(each.forward.size(), net.layers().size());
  // 25 MB: one bucket, complete when ip1's backward is done.
  const IterationProfile one = PlanIteration(net, 25);
  ASSERT_EQ(one.buckets.size(), 1u);
  EXPECT_EQ(one.buckets[0].ready_layer, 1);
  EXPECT_EQ(one.buckets[0].gradient_bytes, arena);
}

}  // namespace
}  // namespace doppio
