// --grad_compression as an MPI job (2 ranks): the sums each method forms over the ranks
// against MPI's allreduce (fp16 within 1e-3, top-k with FRACTION 1 exactly, full-rank
// PowerSGD within float rounding), error feedback conserving the gradient over the ranks,
// training with each method in both sync modes (top-k 1 trains exactly what uncompressed
// training does), the bytes sent, the timeline's spans, and the state in the .solverstate:
// a resumed run continues bit for bit, another rank count takes the mean residual.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <iterator>
#include <sstream>

#include "doppio/parallel/cast_compressor.hpp"
#include "doppio/parallel/compression_state.hpp"
#include "doppio/parallel/distributed_solver.hpp"
#include "doppio/parallel/powersgd_compressor.hpp"
#include "doppio/parallel/topk_compressor.hpp"
#include "doppio/util/io.hpp"
#include "doppio/util/rng.hpp"
#include "mpi_test_util.hpp"
#include "parallel_test_data.hpp"
#include "test_util.hpp"

namespace doppio {
namespace {

using mpi_test::World;

// Different on every rank.
std::vector<float> RankGaussian(std::size_t count, std::uint64_t seed) {
  Rng rng(seed * 131 + World()->rank());
  std::vector<float> values(count);
  for (float& value : values) value = static_cast<float>(rng.Gaussian(0, 1));
  return values;
}

std::vector<float> Allreduced(std::vector<float> values) {
  World()->Allreduce(values.data(), values.size(), CommType::kFloat, ReduceOp::kSum);
  return values;
}

// Start, Continue, Wait and Decompress of one bucket.
void Exchange(BucketCompressor<float>* compressor, std::vector<float>* bucket) {
  compressor->Start(bucket->data(), World().get(), "test bucket");
  compressor->Continue();
  compressor->Wait();
  compressor->Decompress(bucket->data());
}

TEST(CompressionTest, SixteenBitSumsEqualTheFloatAllreduce) {
  const std::vector<float> gradient = RankGaussian(5000, 1);
  const std::vector<float> exact = Allreduced(gradient);
  const std::vector<float> magnitude = [&] {
    std::vector<float> absolute(gradient.size());
    for (std::size_t i = 0; i < gradient.size(); ++i) absolute[i] = std::fabs(gradient[i]);
    return Allreduced(absolute);
  }();
  for (bool bfloat16 : {false, true}) {
    CastCompressor<float> compressor(gradient.size(), bfloat16);
    std::vector<float> bucket = gradient;
    Exchange(&compressor, &bucket);
    // Each rank's value is rounded once (relative 2^-11 for fp16, 2^-8 for bf16), the sum
    // formed in float.
    const double tolerance = bfloat16 ? 4e-3 : 1e-3;
    double error = 0, norm = 0;
    for (std::size_t i = 0; i < bucket.size(); ++i) {
      EXPECT_LE(std::fabs(bucket[i] - exact[i]), tolerance * magnitude[i] + 1e-7)
          << (bfloat16 ? "bf16" : "fp16") << " entry " << i;
      error += (bucket[i] - exact[i]) * double(bucket[i] - exact[i]);
      norm += exact[i] * double(exact[i]);
    }
    EXPECT_LE(std::sqrt(error / norm), tolerance / 2);
    EXPECT_GT(error, 0) << "the 16 bits changed nothing: the test would not see a float sum";
  }
}

TEST(CompressionTest, TopKOfFractionOneEqualsTheAllreduceExactly) {
  const std::vector<float> gradient = RankGaussian(999, 2);
  TopKCompressor<float> compressor(gradient.size(), 1.0);
  std::vector<float> bucket = gradient;
  Exchange(&compressor, &bucket);
  EXPECT_EQ(bucket, Allreduced(gradient));
}

TEST(CompressionTest, PowerSgdOfFullRankEqualsTheAllreduce) {
  // A 12 x 30 matrix, a vector, an 8 x 2 x 3 tensor; rank 12 is full for both.
  const std::vector<BucketParam> params = {{0, 360, 12}, {360, 7, 0}, {367, 48, 8}};
  const std::vector<float> gradient = RankGaussian(415, 3);
  PowerSgdCompressor<float> compressor(gradient.size(), params, 12, 5);
  std::vector<float> bucket = gradient;
  Exchange(&compressor, &bucket);
  const std::vector<float> exact = Allreduced(gradient);
  for (std::size_t i = 0; i < bucket.size(); ++i) {
    EXPECT_NEAR(bucket[i], exact[i], 2e-5 + 2e-5 * std::fabs(exact[i])) << i;
  }
  // The ranks' Q is the same.
  std::vector<float> q = compressor.shared_state();
  const std::vector<float> sum = Allreduced(q);
  for (std::size_t i = 0; i < q.size(); ++i) EXPECT_EQ(sum[i], q[i] * World()->size());
}

// Over the ranks, what was sent plus what every rank still owes is every gradient so far.
void ExpectConservation(BucketCompressor<float>* compressor, std::size_t count,
                        const std::string& what) {
  std::vector<float> owed(count, 0.f);
  for (int step = 0; step < 4; ++step) {
    const std::vector<float> gradient = RankGaussian(count, 40 + step);
    std::vector<float> bucket = gradient;
    Exchange(compressor, &bucket);
    std::vector<float> total(count);
    for (std::size_t i = 0; i < count; ++i) total[i] = owed[i] + gradient[i];
    const std::vector<float> expected = Allreduced(total);
    const std::vector<float> still_owed = Allreduced(compressor->residual());
    double left = 0;
    for (std::size_t i = 0; i < count; ++i) {
      EXPECT_NEAR(bucket[i] + still_owed[i], expected[i], 1e-4 + 1e-5 * std::fabs(expected[i]))
          << what << " step " << step << " entry " << i;
      left += std::fabs(still_owed[i]);
    }
    EXPECT_GT(left, 1) << what << ": nothing left behind, nothing tested";
    owed = compressor->residual();
  }
}

TEST(CompressionTest, ErrorFeedbackConservesTheGradientOverTheRanks) {
  TopKCompressor<float> topk(500, 0.1);
  ExpectConservation(&topk, 500, "topk:0.1");
  PowerSgdCompressor<float> powersgd(500, {{0, 400, 20}, {400, 100, 0}}, 2, 7);
  ExpectConservation(&powersgd, 500, "powersgd:2");
}

constexpr int kBatch = 3;

std::string NetText(const std::string& dir) {
  std::ostringstream s;
  s << "name: 'tiny' "
    << "layer { name: 'data' type: 'Data' top: 'data' top: 'label' "
    << "  transform_param { scale: 0.00390625 } "
    << "  data_param { source: '" << dir << "/train' batch_size: " << kBatch
    << " backend: LMDB } } "
    << "layer { name: 'conv1' type: 'Convolution' bottom: 'data' top: 'conv1' "
    << "  convolution_param { num_output: 3 kernel_size: 3 pad: 1 "
    << "    weight_filler { type: 'gaussian' std: 0.3 } bias_filler { type: 'constant' value: 0.1 "
       "} } } "
    << "layer { name: 'relu1' type: 'ReLU' bottom: 'conv1' top: 'conv1' } "
    << "layer { name: 'ip1' type: 'InnerProduct' bottom: 'conv1' top: 'ip1' "
    << "  inner_product_param { num_output: 12 weight_filler { type: 'gaussian' std: 0.3 } "
    << "    bias_filler { type: 'constant' value: 0.05 } } } "
    << "layer { name: 'relu2' type: 'ReLU' bottom: 'ip1' top: 'ip1' } "
    << "layer { name: 'ip2' type: 'InnerProduct' bottom: 'ip1' top: 'ip2' "
    << "  inner_product_param { num_output: 4 weight_filler { type: 'gaussian' std: 0.3 } } } "
    << "layer { name: 'loss' type: 'SoftmaxWithLoss' bottom: 'ip2' bottom: 'label' top: 'loss' } ";
  return s.str();
}

class CompressedTrainingTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new mpi_test::SharedTempDir();
    if (World()->rank() == 0) parallel_test::WriteRecords(dir_->path() + "/train", 0, 61);
    World()->Barrier("data written");
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }

  static SolverParameter Param(int max_iter, const std::string& extra = "", int iter_size = 1) {
    SolverParameter param = ParseText<SolverParameter>(
        "type: 'SGD' base_lr: 0.05 momentum: 0.9 weight_decay: 0.001 lr_policy: 'fixed' "
        "display: 0 random_seed: 5 snapshot_after_train: false max_iter: " +
        std::to_string(max_iter) + " iter_size: " + std::to_string(iter_size) + " " + extra);
    *param.mutable_net_param() = ParseText<NetParameter>(NetText(dir_->path()));
    return param;
  }

  static ParallelOptions Options(const std::string& compression,
                                 SyncMode mode = SyncMode::kOverlap) {
    ParallelOptions options;
    options.sync = mode;
    options.bucket_mb = 0.0005;  // about 500 bytes: several buckets
    options.compression = ParseGradCompression(compression);
    return options;
  }

  // The weights after `max_iter` iterations, and the last iteration's bytes on this rank.
  static std::vector<float> Train(const std::string& compression, SyncMode mode, int max_iter,
                                  std::uint64_t* bytes = nullptr, int iter_size = 1) {
    DistributedSolver<float> trainer(Param(max_iter, "", iter_size), World(),
                                     Options(compression, mode));
    trainer.Solve();
    if (bytes) *bytes = trainer.sync().last_stats().bytes;
    const Net<float>& net = *trainer.solver()->net();
    return std::vector<float>(net.arena_data(), net.arena_data() + net.arena_count());
  }

  static mpi_test::SharedTempDir* dir_;
};
mpi_test::SharedTempDir* CompressedTrainingTest::dir_ = nullptr;

TEST_F(CompressedTrainingTest, EveryMethodTrainsInBothSyncModes) {
  for (SyncMode mode : {SyncMode::kOverlap, SyncMode::kBlocking}) {
    const std::string what = std::string("--sync=") + SyncModeName(mode);
    std::uint64_t plain_bytes = 0, fp16_bytes = 0;
    const std::vector<float> plain = Train("none", mode, 5, &plain_bytes);
    // Every entry sent: the same sums, bit for bit (two ranks: one addition either way).
    EXPECT_EQ(Train("topk:1", mode, 5), plain) << what;
    const std::vector<float> initial = Train("none", mode, 0);
    EXPECT_NE(plain, initial);
    const std::vector<float> fp16 = Train("fp16", mode, 5, &fp16_bytes);
    EXPECT_EQ(fp16_bytes * 2, plain_bytes) << what;
    for (const std::string& lossy : {std::string("fp16"), std::string("bf16"),
                                     std::string("topk:0.3"), std::string("powersgd:2")}) {
      const std::vector<float> weights = lossy == "fp16" ? fp16 : Train(lossy, mode, 5);
      double distance = 0, moved = 0;
      for (std::size_t i = 0; i < plain.size(); ++i) {
        distance += std::fabs(weights[i] - plain[i]);
        moved += std::fabs(plain[i] - initial[i]);
        ASSERT_TRUE(std::isfinite(weights[i])) << lossy;
      }
      EXPECT_GT(distance, 0) << lossy << " " << what << ": lossless?";
      EXPECT_LT(distance, moved) << lossy << " " << what << ": nowhere near uncompressed";
    }
  }
}

TEST_F(CompressedTrainingTest, IterSizeCompressesTheAccumulatedGradientOnce) {
  EXPECT_EQ(Train("topk:1", SyncMode::kOverlap, 3, nullptr, 2),
            Train("none", SyncMode::kOverlap, 3, nullptr, 2));
  std::uint64_t once = 0, twice = 0;
  Train("topk:0.5", SyncMode::kOverlap, 2, &once, 1);
  Train("topk:0.5", SyncMode::kOverlap, 2, &twice, 2);
  EXPECT_EQ(once, twice);
}

TEST_F(CompressedTrainingTest, PlainIterationsBeforeCompressionStartIter) {
  ParallelOptions options = Options("topk:0.1");
  options.compression_start_iter = 3;
  DistributedSolver<float> trainer(Param(3), World(), options);
  trainer.Solve();
  // Three plain iterations: exactly uncompressed training.
  const Net<float>& net = *trainer.solver()->net();
  EXPECT_EQ(std::vector<float>(net.arena_data(), net.arena_data() + net.arena_count()),
            Train("none", SyncMode::kOverlap, 3));
}

TEST_F(CompressedTrainingTest, TheTimelineShowsCompressAndDecompress) {
  ParallelOptions options = Options("powersgd:1");
  options.timeline_file = dir_->path() + "/trace.json";
  DistributedSolver<float> trainer(Param(2), World(), options);
  trainer.Solve();
  if (World()->rank() == 0) {
    std::ifstream file(options.timeline_file);
    const std::string trace((std::istreambuf_iterator<char>(file)), {});
    EXPECT_NE(trace.find("\"compress bucket 0\""), std::string::npos);
    EXPECT_NE(trace.find("\"decompress bucket 0\""), std::string::npos);
    EXPECT_NE(trace.find("powersgd:1 bucket 0"), std::string::npos);
  }
}

TEST_F(CompressedTrainingTest, AResumedRunContinuesIdentically) {
  for (const std::string method : {"topk:0.2", "powersgd:2"}) {
    const std::string prefix = dir_->path() + "/resume_" + method.substr(0, 4);
    const std::vector<float> uninterrupted = Train(method, SyncMode::kOverlap, 6);
    {
      DistributedSolver<float> first(Param(3, "snapshot: 3 snapshot_prefix: '" + prefix + "'"),
                                     World(), Options(method));
      first.Solve();
    }
    World()->Barrier();
    const std::string state_file = prefix + "_iter_3.solverstate";
    SolverState state;
    ReadProtoFromBinaryFile(state_file, &state);
    ASSERT_TRUE(state.has_compression()) << method;
    EXPECT_EQ(state.compression().method(), method);
    EXPECT_EQ(state.compression().version(), 1);
    EXPECT_EQ(state.compression().num_ranks(), World()->size());
    EXPECT_EQ(state.compression().residual_size(), World()->size());
    // PowerSGD's Q; top-k's last step (its momentum correction: SGD with momentum).
    EXPECT_TRUE(state.compression().has_shared()) << method;

    DistributedSolver<float> resumed(Param(6), World(), Options(method));
    resumed.Solve(state_file);
    const Net<float>& net = *resumed.solver()->net();
    EXPECT_EQ(std::vector<float>(net.arena_data(), net.arena_data() + net.arena_count()),
              uninterrupted)
        << method;
    // Without the residuals the run would differ: the state matters.
    state.clear_compression();
    WriteProtoToBinaryFile(state, prefix + "_bare.solverstate");
    World()->Barrier();
    DistributedSolver<float> bare(Param(6), World(), Options(method));
    bare.Solve(prefix + "_bare.solverstate");
    const Net<float>& bare_net = *bare.solver()->net();
    EXPECT_NE(
        std::vector<float>(bare_net.arena_data(), bare_net.arena_data() + bare_net.arena_count()),
        uninterrupted)
        << method;
  }
}

TEST_F(CompressedTrainingTest, AnotherRankCountStartsFromTheMeanResidual) {
  using Field = GradientSync<float>::StateField;
  DistributedSolver<float> trainer(Param(1), World(), Options("topk:0.1"));
  GradientSync<float>& sync = trainer.sync();
  ASSERT_FLOAT_EQ(sync.corrected_momentum(), 0.9);
  const std::size_t count = sync.CompressionState(Field::kResidual).size();
  ASSERT_GT(count, 0u);
  ASSERT_EQ(sync.CompressionState(Field::kVelocity).size(), count);
  SolverState state;
  CompressionState* saved = state.mutable_compression();
  // As given on another run's command line: the same method.
  saved->set_method("topk:.1");
  saved->set_version(1);
  saved->set_momentum(sync.corrected_momentum());
  const int ranks = World()->size() + 1;
  saved->set_num_ranks(ranks);
  for (int r = 0; r < ranks; ++r) {
    BlobProto* residual = saved->add_residual();
    BlobProto* velocity = saved->add_velocity();
    for (std::size_t i = 0; i < count; ++i) {
      residual->add_data(static_cast<float>(r + i));
      velocity->add_data(static_cast<float>(2 * r));
    }
  }
  // The momentum correction's last step, the same on every rank.
  const std::size_t shared = sync.CompressionState(Field::kShared).size();
  ASSERT_GT(shared, 0u);
  for (std::size_t i = 0; i < shared; ++i) saved->mutable_shared()->add_data(0.5f);
  RestoreCompressionState(state, World()->size(), World()->rank(), "state", &sync);
  EXPECT_EQ(sync.CompressionState(Field::kShared), std::vector<float>(shared, 0.5f));
  const std::vector<float> residual = sync.CompressionState(Field::kResidual);
  for (std::size_t i = 0; i < count; ++i) {
    EXPECT_FLOAT_EQ(residual[i], static_cast<float>(i) + (ranks - 1) / 2.0f) << i;
  }
  EXPECT_EQ(sync.CompressionState(Field::kVelocity),
            std::vector<float>(count, static_cast<float>(ranks - 1)));
  // The same rank count: each rank its own.
  saved->set_num_ranks(World()->size());
  saved->mutable_residual()->RemoveLast();
  saved->mutable_velocity()->RemoveLast();
  RestoreCompressionState(state, World()->size(), World()->rank(), "state", &sync);
  EXPECT_EQ(sync.CompressionState(Field::kResidual)[0], static_cast<float>(World()->rank()));
  EXPECT_EQ(sync.CompressionState(Field::kVelocity)[0], static_cast<float>(2 * World()->rank()));
  // Version 0 wrote the velocity after the residual, in one blob: it reads the same.
  CompressionState version0 = *saved;
  version0.clear_version();
  version0.clear_momentum();
  version0.clear_velocity();
  for (int r = 0; r < version0.num_ranks(); ++r) {
    for (std::size_t i = 0; i < count; ++i) version0.mutable_residual(r)->add_data(7.0f);
  }
  SolverState old_state;
  *old_state.mutable_compression() = version0;
  RestoreCompressionState(old_state, World()->size(), World()->rank(), "old.solverstate", &sync);
  EXPECT_EQ(sync.CompressionState(Field::kResidual)[0], static_cast<float>(World()->rank()));
  EXPECT_EQ(sync.CompressionState(Field::kVelocity), std::vector<float>(count, 7.0f));
  // Residuals of another net.
  saved->mutable_residual(0)->add_data(1);
  ExpectError([&] { RestoreCompressionState(state, World()->size(), 0, "old.solverstate", &sync); },
              {"old.solverstate", "compression residual"});
  saved->mutable_residual(0)->mutable_data()->RemoveLast();
  // Another method's state is not this one's.
  saved->set_method("topk:0.5");
  RestoreCompressionState(state, World()->size(), World()->rank(), "state", &sync);
  EXPECT_EQ(sync.CompressionState(Field::kResidual)[0], static_cast<float>(World()->rank()));
  saved->set_method("topk:0.1");
  // Written without the momentum correction (Adam, LARC, or before it existed): the residuals
  // are restored, the velocities and the last step start at zero.
  CompressionState plain = *saved;
  plain.clear_velocity();
  plain.clear_shared();
  plain.set_momentum(0);
  for (BlobProto& blob : *plain.mutable_residual()) {
    blob.clear_data();
    for (std::size_t i = 0; i < count; ++i) blob.add_data(1.0f);
  }
  SolverState plain_state;
  *plain_state.mutable_compression() = plain;
  RestoreCompressionState(plain_state, World()->size(), World()->rank(), "adam.solverstate", &sync);
  EXPECT_EQ(sync.CompressionState(Field::kResidual), std::vector<float>(count, 1.0f));
  EXPECT_EQ(sync.CompressionState(Field::kVelocity), std::vector<float>(count, 0.0f));
  EXPECT_EQ(sync.CompressionState(Field::kShared), std::vector<float>(shared, 0.0f));
  // The reverse: momentum-corrected state resumed by a run that corrects none (Adam) keeps
  // the residuals and drops the rest.
  SolverParameter adam_param = Param(1);
  adam_param.set_type("Adam");
  DistributedSolver<float> adam(adam_param, World(), Options("topk:0.1"));
  GradientSync<float>& adam_sync = adam.sync();
  ASSERT_EQ(adam_sync.corrected_momentum(), 0);
  ASSERT_TRUE(adam_sync.CompressionState(Field::kVelocity).empty());
  RestoreCompressionState(state, World()->size(), World()->rank(), "sgd.solverstate", &adam_sync);
  EXPECT_EQ(adam_sync.CompressionState(Field::kResidual)[0], static_cast<float>(World()->rank()));
  EXPECT_TRUE(adam_sync.CompressionState(Field::kShared).empty());
}

TEST_F(CompressedTrainingTest, ReduceBroadcastWithALossyMethodIsRefused) {
  try {
    DistributedSolver<float> trainer(Param(1), World(),
                                     Options("fp16", SyncMode::kReduceBroadcast));
    ADD_FAILURE() << "no error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("--grad_compression=fp16"), std::string::npos)
        << error.what();
    EXPECT_NE(std::string(error.what()).find("--sync=reduce_bcast"), std::string::npos)
        << error.what();
  }
}

}  // namespace
}  // namespace doppio
