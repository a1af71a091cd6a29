// The parallel pieces that need no MPI job: bucket planning and launching (against a fake
// communicator that records what it is asked), the one-rank communicator, the timeline's
// trace, the fault-injection variables of the test build, and DistributedSolver on one rank.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <iterator>

#include "doppio/parallel/distributed_solver.hpp"
#include "doppio/parallel/gradient_sync.hpp"
#include "doppio/solvers/solver_registry.hpp"
#include "doppio/util/hash.hpp"
#include "test_faults.hpp"
#include "test_util.hpp"

namespace doppio {
namespace {

// x (2 x 10) -> ip1 (100) -> ip2 (50) -> ip3 (10, frozen) -> Euclidean loss.
NetParameter ChainNet() {
  return ParseText<NetParameter>(
      "name: 'chain' state { phase: TRAIN } "
      "layer { name: 'in' type: 'Input' top: 'x' top: 'y' "
      "  input_param { shape { dim: 2 dim: 10 } shape { dim: 2 dim: 10 } } } "
      "layer { name: 'ip1' type: 'InnerProduct' bottom: 'x' top: 'h1' "
      "  inner_product_param { num_output: 100 weight_filler { type: 'gaussian' std: 0.1 } } } "
      "layer { name: 'ip2' type: 'InnerProduct' bottom: 'h1' top: 'h2' "
      "  inner_product_param { num_output: 50 weight_filler { type: 'gaussian' std: 0.1 } } } "
      "layer { name: 'ip3' type: 'InnerProduct' bottom: 'h2' top: 'out' "
      "  param { lr_mult: 0 } param { lr_mult: 0 } "
      "  inner_product_param { num_output: 10 weight_filler { type: 'gaussian' std: 0.1 } } } "
      "layer { name: 'loss' type: 'EuclideanLoss' bottom: 'out' bottom: 'y' top: 'loss' } ");
}

void FillInputs(Net<float>* net) {
  Rng rng(3);
  FillGaussian(net->blob_by_name("x").get(), rng);
  FillGaussian(net->blob_by_name("y").get(), rng);
}

// Pretends to be one of two identical ranks: a sum doubles the buffer. Every operation is
// complete at once; the test sees what was asked and when.
class FakeTwoRanks : public Communicator {
 public:
  explicit FakeTwoRanks(int rank = 0) : rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return 2; }
  int local_rank() const override { return rank_; }
  int local_size() const override { return 2; }
  std::string description() const override { return "fake"; }
  CommHandle IAllreduce(void* buffer, std::size_t count, CommType type, ReduceOp, MemoryKind,
                        const std::string& label) override {
    EXPECT_EQ(type, CommType::kFloat);
    Double(buffer, count);
    return Record(label, count * 4);
  }
  CommHandle IReduce(void* buffer, std::size_t count, CommType, ReduceOp, int root, MemoryKind,
                     const std::string& label) override {
    EXPECT_EQ(root, 0);
    if (rank_ == root) Double(buffer, count);
    return Record(label, count * 4);
  }
  CommHandle IBroadcast(void*, std::size_t count, CommType type, int, MemoryKind,
                        const std::string& label) override {
    return Record(label, count * CommTypeSize(type));
  }
  CommHandle IAllgather(const void*, void*, std::size_t, CommType,
                        const std::string& label) override {
    return Record(label, 0);
  }
  CommHandle IBarrier(const std::string& label) override { return Record(label, 0); }
  CommHandle IGatherv(const void*, std::size_t, void*, const std::vector<std::size_t>&, int,
                      const std::string& label) override {
    return Record(label, 0);
  }
  void set_timeout(double) override {}
  double timeout() const override { return 0; }
  void Abort(int) override { std::abort(); }

  std::vector<std::string> labels;
  // The layer whose backward had just finished when each operation was issued.
  std::vector<int> issued_after_layer;
  int current_layer = -1;

 private:
  static void Double(void* buffer, std::size_t count) {
    float* values = static_cast<float*>(buffer);
    for (std::size_t i = 0; i < count; ++i) values[i] *= 2;
  }
  CommHandle Record(const std::string& label, std::size_t bytes) {
    labels.push_back(label);
    issued_after_layer.push_back(current_layer);
    auto handle = std::make_shared<CommRequest>(label, bytes);
    handle->MarkStarted(CommClockSeconds());
    handle->MarkDone(CommClockSeconds());
    return handle;
  }
  int rank_;
};

TEST(GradientSyncTest, BucketsFollowTheArenaAndSkipFrozenParameters) {
  Net<float> net(ChainNet());
  // Arena order: ip3 (frozen: 500 + 10), ip2 (5000 + 50), ip1 (1000 + 100).
  ASSERT_EQ(net.learnable_params().size(), 6u);
  const auto buckets = GradientSync<float>::PlanBuckets(net, 8000, 1000);
  ASSERT_EQ(buckets.size(), 2u);
  // The small first bucket closes after ip2's weights (20000 bytes >= 1000).
  EXPECT_EQ(buckets[0].offset, 510u);
  EXPECT_EQ(buckets[0].count, 5000u);
  EXPECT_EQ(buckets[0].first_param, 2);
  EXPECT_EQ(buckets[0].end_param, 3);
  // The rest fits one 8000-byte bucket.
  EXPECT_EQ(buckets[1].offset, 5510u);
  EXPECT_EQ(buckets[1].count, 1150u);
  EXPECT_EQ(buckets[1].num_synced, 3);
  // One bucket per parameter when the threshold is tiny.
  EXPECT_EQ(GradientSync<float>::PlanBuckets(net, 4, 4).size(), 4u);
  // Everything in one when it is huge.
  EXPECT_EQ(GradientSync<float>::PlanBuckets(net, 1 << 30, 1 << 30).size(), 1u);
}

TEST(GradientSyncTest, BucketsLaunchDuringBackwardInOrderAndAverage) {
  Net<float> net(ChainNet());
  FillInputs(&net);
  // The single-rank gradient, for comparison.
  net.ClearParamDiffs();
  net.ForwardBackward();
  const std::vector<float> expected(net.arena_diff(), net.arena_diff() + net.arena_count());

  FakeTwoRanks comm;
  GradientSync<float> sync(&net, &comm, SyncMode::kOverlap, 8000.0 / (1 << 20), 1);
  ASSERT_EQ(sync.buckets().size(), 2u);
  net.add_after_backward([&](int layer) { comm.current_layer = layer; });
  net.add_after_backward([&](int layer) { sync.AfterBackward(layer); });
  net.ClearParamDiffs();
  sync.BeginIteration();
  net.ForwardBackward();
  // Bucket 0 (ip2) left as soon as ip2 (layer 2) finished, bucket 1 after ip1 (layer 1).
  ASSERT_EQ(comm.labels.size(), 2u);
  EXPECT_EQ(comm.labels[0].rfind("allreduce bucket 0", 0), 0u) << comm.labels[0];
  EXPECT_EQ(comm.labels[1].rfind("allreduce bucket 1", 0), 0u) << comm.labels[1];
  EXPECT_EQ(comm.issued_after_layer, (std::vector<int>{2, 1}));
  sync.FinishGradients();
  EXPECT_TRUE(sync.ApplyUpdateHere());
  // Summed over two identical ranks and divided by two: the same gradient.
  for (std::size_t i = 0; i < expected.size(); ++i) {
    ASSERT_FLOAT_EQ(net.arena_diff()[i], expected[i]) << i;
  }
  EXPECT_EQ(sync.last_stats().bytes, 6150u * 4);
}

TEST(GradientSyncTest, IterSizeCommunicatesOnTheLastPassOnly) {
  Net<float> net(ChainNet());
  FillInputs(&net);
  FakeTwoRanks comm;
  GradientSync<float> sync(&net, &comm, SyncMode::kOverlap, 8000.0 / (1 << 20), 3);
  net.add_after_backward([&](int layer) { sync.AfterBackward(layer); });
  for (int iteration = 0; iteration < 2; ++iteration) {
    sync.BeginIteration();
    net.ForwardBackward();
    net.ForwardBackward();
    EXPECT_EQ(comm.labels.size(), 2u * iteration);
    net.ForwardBackward();
    EXPECT_EQ(comm.labels.size(), 2u * iteration + 2);
    sync.FinishGradients();
  }
}

std::string ErrorOf(const std::function<void()>& statement) {
  try {
    statement();
  } catch (const Error& error) {
    return error.what();
  }
  return "no Error";
}

// Buckets so small that every communicated parameter is one of its own: ip2's weights and
// bias (final after layer 2), then ip1's (after layer 1).
class LaunchOrderTest : public ::testing::Test {
 protected:
  LaunchOrderTest()
      : net_(ChainNet()), sync_(&net_, &comm_, SyncMode::kOverlap, 1.0 / (1 << 20), 1) {}
  void Backward(std::initializer_list<int> layers) {
    for (int layer : layers) sync_.AfterBackward(layer);
  }
  void ExpectLaunchedInOrder() {
    ASSERT_EQ(comm_.labels.size(), 4u);
    for (int b = 0; b < 4; ++b) {
      EXPECT_EQ(comm_.labels[b].rfind("allreduce bucket " + std::to_string(b) + " ", 0), 0u)
          << comm_.labels[b];
    }
  }

  Net<float> net_;
  FakeTwoRanks comm_;
  GradientSync<float> sync_;
};

TEST_F(LaunchOrderTest, IsPlannedFromWhereBackwardCompletesEachBucket) {
  ASSERT_EQ(sync_.buckets().size(), 4u);
  EXPECT_EQ(sync_.launch_order(), (std::vector<int>{0, 1, 2, 3}));
  // The plan follows backward, not the arena: the same buckets listed the other way round
  // are launched ip2's first all the same.
  const std::vector<GradientBucket> reversed(sync_.buckets().rbegin(), sync_.buckets().rend());
  EXPECT_EQ(GradientSync<float>::PlanLaunchOrder(net_, reversed), (std::vector<int>{2, 3, 0, 1}));
}

TEST_F(LaunchOrderTest, ABucketCompleteAheadOfItsTurnIsHeldBack) {
  sync_.BeginIteration();
  // ip1 (layer 1) reports before ip2 (layer 2): its buckets, planned after ip2's, wait.
  Backward({4, 3, 1});
  EXPECT_TRUE(comm_.labels.empty());
  Backward({2});
  ExpectLaunchedInOrder();
  Backward({0});
  sync_.FinishGradients();
  // The next iteration starts afresh.
  comm_.labels.clear();
  sync_.BeginIteration();
  Backward({4, 3, 2, 1, 0});
  ExpectLaunchedInOrder();
  sync_.FinishGradients();
}

TEST_F(LaunchOrderTest, ABucketCompletedTwiceOrNeverIsAnError) {
  sync_.BeginIteration();
  Backward({4, 3, 2});
  EXPECT_EQ(comm_.labels.size(), 2u);
  EXPECT_CONTAINS(ErrorOf([&] { Backward({2}); }),
                  "gradient bucket 0: the backward of layer 'ip2' finished a gradient of "
                  "it after all of them were final");
  // ip1's backward is never reported.
  EXPECT_CONTAINS(ErrorOf([&] { sync_.FinishGradients(); }),
                  "gradient bucket 2 was not launched by the end of backward (1 of its 1 "
                  "gradients not final, 2 bucket(s) left)");
  // Nothing was issued out of order to make up for either.
  EXPECT_EQ(comm_.labels.size(), 2u);
}

TEST(GradientSyncTest, BlockingAndReduceBroadcastModes) {
  Net<float> net(ChainNet());
  FillInputs(&net);
  {
    FakeTwoRanks comm;
    GradientSync<float> sync(&net, &comm, SyncMode::kBlocking, 8000.0 / (1 << 20), 1);
    net.add_after_backward([&](int layer) { sync.AfterBackward(layer); });
    sync.BeginIteration();
    net.ForwardBackward();
    EXPECT_TRUE(comm.labels.empty());
    sync.FinishGradients();
    ASSERT_EQ(comm.labels.size(), 1u);
    EXPECT_EQ(comm.labels[0].rfind("allreduce all gradients", 0), 0u);
    sync.AfterUpdate();
    EXPECT_EQ(comm.labels.size(), 1u);
  }
  for (int rank : {0, 1}) {
    Net<float> other(ChainNet());
    FillInputs(&other);
    other.ClearParamDiffs();
    other.ForwardBackward();
    const std::vector<float> local(other.arena_diff(), other.arena_diff() + other.arena_count());
    FakeTwoRanks comm(rank);
    GradientSync<float> sync(&other, &comm, SyncMode::kReduceBroadcast, 8000.0 / (1 << 20), 1);
    other.add_after_backward([&](int layer) { sync.AfterBackward(layer); });
    other.ClearParamDiffs();
    sync.BeginIteration();
    other.ForwardBackward();
    sync.FinishGradients();
    EXPECT_EQ(sync.ApplyUpdateHere(), rank == 0);
    // Rank 0 holds the mean; the others keep their own gradient, unscaled.
    for (std::size_t i = 0; i < local.size(); ++i) {
      ASSERT_FLOAT_EQ(other.arena_diff()[i], local[i]);
    }
    sync.AfterUpdate();
    ASSERT_EQ(comm.labels.size(), 3u);
    EXPECT_EQ(comm.labels[0].rfind("reduce bucket 0", 0), 0u);
    EXPECT_EQ(comm.labels[2].rfind("broadcast weights", 0), 0u);
  }
}

TEST(GradientSyncTest, LayoutHashDependsOnModeBucketsAndShapes) {
  Net<float> net(ChainNet());
  FakeTwoRanks comm;
  auto hash = [&](SyncMode mode, double mb) {
    return GradientSync<float>(&net, &comm, mode, mb, 1).LayoutHash();
  };
  EXPECT_EQ(hash(SyncMode::kOverlap, 0.01), hash(SyncMode::kOverlap, 0.01));
  EXPECT_NE(hash(SyncMode::kOverlap, 0.01), hash(SyncMode::kOverlap, 0.02));
  EXPECT_NE(hash(SyncMode::kOverlap, 0.01), hash(SyncMode::kBlocking, 0.01));
  NetParameter wider = ChainNet();
  wider.mutable_layer(1)->mutable_inner_product_param()->set_num_output(101);
  Net<float> other(wider);
  EXPECT_NE(GradientSync<float>(&other, &comm, SyncMode::kOverlap, 0.01, 1).LayoutHash(),
            hash(SyncMode::kOverlap, 0.01));
  EXPECT_THROW(GradientSync<float>(&net, &comm, SyncMode::kOverlap, 0, 1), Error);
  EXPECT_NE(GradientSync<float>(&net, &comm, SyncMode::kOverlap, 25, 1)
                .Describe()
                .find("1 gradient bucket"),
            std::string::npos);
}

TEST(GradientSyncTest, SyncModeNames) {
  for (SyncMode mode : {SyncMode::kOverlap, SyncMode::kReduceBroadcast, SyncMode::kBlocking}) {
    EXPECT_EQ(ParseSyncMode(SyncModeName(mode)), mode);
  }
  try {
    ParseSyncMode("ring");
    ADD_FAILURE() << "no Error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("--sync"), std::string::npos);
    EXPECT_NE(std::string(error.what()).find("'ring'"), std::string::npos);
  }
}

TEST(SelfCommunicatorTest, EveryOperationIsDoneAtOnce) {
  SelfCommunicator comm;
  EXPECT_EQ(comm.size(), 1);
  float values[3] = {1, 2, 3};
  CommHandle handle =
      comm.IAllreduce(values, 3, CommType::kFloat, ReduceOp::kSum, MemoryKind::kHost, "x");
  EXPECT_TRUE(handle->Test());
  handle->Wait();
  EXPECT_EQ(values[2], 3);
  float gathered[3];
  comm.Allgather(values, gathered, 3, CommType::kFloat);
  EXPECT_EQ(gathered[1], 2);
  std::string text = "abc";
  comm.BroadcastBytes(&text, 0);
  EXPECT_EQ(text, "abc");
  EXPECT_EQ(comm.GatherBytes("xyz", 0), std::vector<std::string>{"xyz"});
  EXPECT_THROW(comm.Broadcast(values, 3, CommType::kFloat, 1), Error);
}

TEST(HasherTest, DeterministicAndSensitive) {
  const std::string a = "the quick brown fox", b = "the quick brown fix";
  EXPECT_EQ(Hasher().Add(a).value(), Hasher().Add(a).value());
  EXPECT_NE(Hasher().Add(a).value(), Hasher().Add(b).value());
  EXPECT_NE(Hasher().Add(std::string("ab")).Add(std::string("c")).value(),
            Hasher().Add(std::string("a")).Add(std::string("bc")).value());
  EXPECT_NE(Hasher().Add(0.0f).value(), Hasher().Add(-0.0f).value());
}

TEST(TimelineTest, WritesAChromeTrace) {
  TempDir dir;
  Timeline timeline(100.0);
  timeline.Span("forward \"conv1\"", "forward", Timeline::kCompute, 100.5, 100.75);
  timeline.Span("allreduce bucket 0 (1.0 MB)", "communication", Timeline::kCommunication, 100.6,
                100.9, 1 << 20);
  SelfCommunicator comm;
  const std::string path = dir.path() + "/trace.json";
  EXPECT_EQ(timeline.Write(&comm, path), 2u);
  std::ifstream in(path);
  const std::string json((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(json.rfind("{\"displayTimeUnit\":\"ms\",\"traceEvents\":[", 0), 0u);
  EXPECT_NE(json.find("\"name\":\"forward \\\"conv1\\\"\",\"cat\":\"forward\",\"ph\":\"X\","
                      "\"pid\":0,\"tid\":0,\"ts\":500000.000,\"dur\":250000.000"),
            std::string::npos)
      << json;
  EXPECT_NE(
      json.find("\"tid\":1,\"ts\":600000.000,\"dur\":300000.000,\"args\":{\"bytes\":1048576}"),
      std::string::npos)
      << json;
  EXPECT_NE(json.find("\"process_name\""), std::string::npos);
  EXPECT_NE(json.find("\"name\":\"communication\""), std::string::npos);
  // Balanced brackets, and it ends the array and the object.
  EXPECT_EQ(std::count(json.begin(), json.end(), '{'), std::count(json.begin(), json.end(), '}'));
  EXPECT_EQ(json.substr(json.size() - 4), "\n]}\n");
  // A full timeline records no more.
  Timeline small(0, 1);
  small.Span("a", "x", Timeline::kCompute, 0, 1);
  small.Span("b", "x", Timeline::kCompute, 1, 2);
  EXPECT_EQ(small.num_events(), 1u);
  EXPECT_THROW(timeline.Write(&comm, dir.path() + "/no/such/folder/trace.json"), Error);
}

class FaultInjectionTest : public ::testing::Test {
 protected:
  void TearDown() override {
    unsetenv("DOPPIO_FAIL_RANK");
    unsetenv("DOPPIO_FAIL_ITER");
    unsetenv("DOPPIO_FAIL_MODE");
  }
};

TEST_F(FaultInjectionTest, ReadsAndChecksTheVariables) {
  EXPECT_FALSE(FaultInjectionFromEnvironment().active());
  setenv("DOPPIO_FAIL_RANK", "1", 1);
  setenv("DOPPIO_FAIL_ITER", "7", 1);
  FaultInjection fault = FaultInjectionFromEnvironment();
  EXPECT_TRUE(fault.active());
  EXPECT_EQ(fault.rank, 1);
  EXPECT_EQ(fault.iter, 7);
  EXPECT_EQ(fault.mode, "error");
  setenv("DOPPIO_FAIL_MODE", "explode", 1);
  EXPECT_THROW(FaultInjectionFromEnvironment(), Error);
  setenv("DOPPIO_FAIL_MODE", "hang", 1);
  EXPECT_EQ(FaultInjectionFromEnvironment().mode, "hang");
  setenv("DOPPIO_FAIL_RANK", "one", 1);
  EXPECT_THROW(FaultInjectionFromEnvironment(), Error);
  setenv("DOPPIO_FAIL_RANK", "1", 1);
  unsetenv("DOPPIO_FAIL_ITER");
  EXPECT_THROW(FaultInjectionFromEnvironment(), Error);
}

SolverParameter LeastSquares(const std::string& extra = "") {
  SolverParameter param = ParseText<SolverParameter>(
      "base_lr: 0.05 momentum: 0.9 lr_policy: 'fixed' max_iter: 5 display: 0 random_seed: 3 "
      "snapshot_after_train: false net_param { name: 'lsq' "
      "layer { name: 'data' type: 'DummyData' top: 'x' top: 'y' dummy_data_param { "
      "  shape { dim: 4 dim: 3 } shape { dim: 4 dim: 1 } data_filler { type: 'gaussian' } } } "
      "layer { name: 'ip1' type: 'InnerProduct' bottom: 'x' top: 'h' inner_product_param { "
      "  num_output: 5 weight_filler { type: 'gaussian' std: 0.5 } } } "
      "layer { name: 'relu' type: 'ReLU' bottom: 'h' top: 'h' } "
      "layer { name: 'ip2' type: 'InnerProduct' bottom: 'h' top: 'out' inner_product_param { "
      "  num_output: 1 weight_filler { type: 'gaussian' std: 0.5 } } } "
      "layer { name: 'loss' type: 'EuclideanLoss' bottom: 'out' bottom: 'y' top: 'loss' } }");
  param.MergeFrom(ParseText<SolverParameter>(extra));
  return param;
}

TEST(DistributedSolverTest, OneRankTrainsExactlyAsThePlainSolver) {
  TempDir dir;
  ParallelOptions options;
  options.timeline_file = dir.path() + "/one.json";
  DistributedSolver<float> trainer(LeastSquares("test_iter: 2 test_interval: 2"),
                                   std::make_shared<SelfCommunicator>(), options, FaultInjection());
  trainer.Solve();
  auto plain = SolverRegistry<float>::CreateSolver(LeastSquares("test_iter: 2 test_interval: 2"));
  plain->Solve();
  const auto& a = *trainer.solver()->net();
  const auto& b = *plain->net();
  ASSERT_EQ(a.arena_count(), b.arena_count());
  for (std::size_t i = 0; i < a.arena_count(); ++i) EXPECT_EQ(a.arena_data()[i], b.arena_data()[i]);
  EXPECT_EQ(trainer.solver()->last_test_scores(), plain->last_test_scores());
  EXPECT_EQ(trainer.totals().iterations, 5);
  EXPECT_EQ(trainer.totals().wait, 0);
  std::ifstream in(options.timeline_file);
  const std::string json((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(json.find("\"forward ip1\""), std::string::npos);
  EXPECT_NE(json.find("\"backward ip2\""), std::string::npos);
  EXPECT_NE(json.find("\"test #0 loss\""), std::string::npos);
}

TEST(DistributedSolverTest, FaultInjectionThrowsAtTheIteration) {
  FaultInjection fault;
  fault.rank = 0;
  fault.iter = 3;
  DistributedSolver<float> trainer(LeastSquares(), std::make_shared<SelfCommunicator>(),
                                   ParallelOptions(), fault);
  try {
    trainer.Solve();
    ADD_FAILURE() << "no Error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("rank 0 fails at iteration 3"), std::string::npos)
        << error.what();
  }
  EXPECT_EQ(trainer.solver()->iter(), 3);
}

TEST(DistributedSolverTest, OneRankErrorsAreThrownAsTheyAre) {
  SolverParameter bad = LeastSquares();
  bad.mutable_net_param()->mutable_layer(1)->set_type("Nope");
  try {
    DistributedSolver<float>(bad, std::make_shared<SelfCommunicator>(), ParallelOptions(),
                             FaultInjection());
    ADD_FAILURE() << "no Error";
  } catch (const AgreedError& error) {
    EXPECT_NE(std::string(error.what()).find("Nope"), std::string::npos) << error.what();
    EXPECT_EQ(std::string(error.what()).find("rank 0 could not"), std::string::npos);
  }
}

}  // namespace
}  // namespace doppio
