// The per-rank solver parameter of data-parallel training (ConfigureRank): a pure function
// of the parameter, the rank, the number of ranks and the options, tested without MPI.
#include "doppio/parallel/rank_config.hpp"

#include <gtest/gtest.h>

#include <fstream>

#include "test_util.hpp"

namespace doppio {
namespace {

SolverParameter Param() {
  return ParseText<SolverParameter>(
      "base_lr: 0.1 lr_policy: 'fixed' max_iter: 10 random_seed: 5 snapshot: 4 "
      "snapshot_prefix: 'snap/x' weights: 'init.caffemodel' solver_type: NESTEROV "
      "test_iter: 5 test_interval: 2 "
      "net_param { name: 'n' "
      "  layer { name: 'data' type: 'Data' top: 'x' top: 'y' "
      "    data_param { source: 'train_db' batch_size: 8 } } "
      "  layer { name: 'ip' type: 'InnerProduct' bottom: 'x' top: 'out' "
      "    inner_product_param { num_output: 2 } } } "
      "test_net_param { name: 't' "
      "  layer { name: 'test_data' type: 'Data' top: 'x' "
      "    data_param { source: 'test_db' batch_size: 4 } } }");
}

RankSetup OnRank(int rank, int size) {
  RankSetup setup;
  setup.rank = rank;
  setup.size = size;
  return setup;
}

TEST(RankConfigTest, OneRankKeepsTheParameter) {
  std::vector<RankNote> notes;
  const RankConfig config = ConfigureRank(Param(), OnRank(0, 1), &notes);
  EXPECT_TRUE(notes.empty());
  EXPECT_EQ(config.param.base_lr(), 0.1f);
  EXPECT_EQ(config.param.random_seed(), 5);
  EXPECT_EQ(config.param.test_iter(0), 5);
  EXPECT_EQ(config.param.weights_size(), 1);
  EXPECT_EQ(config.param.net_param().layer(0).data_param().shard_size(), 1);
  EXPECT_TRUE(config.sharded_layers.empty());
  EXPECT_EQ(config.test_iter_total, std::vector<int>{5});
}

TEST(RankConfigTest, EachRankReadsItsShardAndItsPartOfTheTestBatches) {
  std::vector<RankNote> notes;
  const RankConfig zero = ConfigureRank(Param(), OnRank(0, 2), &notes);
  const RankConfig one = ConfigureRank(Param(), OnRank(1, 2), &notes);
  EXPECT_EQ(zero.param.net_param().layer(0).data_param().shard_rank(), 0);
  EXPECT_EQ(one.param.net_param().layer(0).data_param().shard_rank(), 1);
  EXPECT_EQ(one.param.net_param().layer(0).data_param().shard_size(), 2);
  EXPECT_EQ(one.param.test_net_param(0).layer(0).data_param().shard_rank(), 1);
  EXPECT_EQ(one.sharded_layers, (std::vector<std::string>{"data", "test_data"}));
  // 5 test batches: 3 on rank 0, 2 on rank 1.
  EXPECT_EQ(zero.param.test_iter(0), 3);
  EXPECT_EQ(one.param.test_iter(0), 2);
  EXPECT_EQ(one.test_iter_total, std::vector<int>{5});
  // Only rank 0 loads weights and writes snapshots; every rank keeps the seed.
  EXPECT_EQ(zero.param.weights_size(), 1);
  EXPECT_EQ(zero.param.snapshot(), 4);
  EXPECT_EQ(zero.param.random_seed(), 5);
  EXPECT_EQ(one.param.weights_size(), 0);
  EXPECT_EQ(one.param.snapshot(), 0);
  EXPECT_FALSE(one.param.snapshot_after_train());
  EXPECT_EQ(one.param.random_seed(), 5);
  // The learning rate is kept, and said to be.
  EXPECT_EQ(one.param.base_lr(), 0.1f);
  ASSERT_EQ(notes.size(), 2u);
  EXPECT_FALSE(notes[0].warning);
  EXPECT_EQ(notes[0].text,
            "base_lr 0.1 is used unchanged for the global batch of 2 ranks (--scale_lr "
            "multiplies it by the number of ranks)");
}

TEST(RankConfigTest, TheRanksAgreeOnWhatTheyMustShare) {
  std::vector<RankNote> notes;
  const RankConfig zero = ConfigureRank(Param(), OnRank(0, 3), &notes);
  const RankConfig two = ConfigureRank(Param(), OnRank(2, 3), &notes);
  // Seeds, weights, snapshots and the shard differ; the hashes do not.
  EXPECT_EQ(zero.net_hash, two.net_hash);
  EXPECT_EQ(zero.solver_hash, two.solver_hash);
  SolverParameter other_net = Param();
  other_net.mutable_net_param()->mutable_layer(1)->mutable_inner_product_param()->set_num_output(3);
  const RankConfig changed_net = ConfigureRank(other_net, OnRank(0, 3), &notes);
  EXPECT_NE(changed_net.net_hash, zero.net_hash);
  EXPECT_EQ(changed_net.solver_hash, zero.solver_hash);
  SolverParameter other_solver = Param();
  other_solver.set_momentum(0.5f);
  EXPECT_NE(ConfigureRank(other_solver, OnRank(0, 3), &notes).solver_hash, zero.solver_hash);
  RankSetup with_timeline = OnRank(0, 3);
  with_timeline.timeline = true;
  const RankConfig timeline = ConfigureRank(Param(), with_timeline, &notes);
  EXPECT_NE(timeline.solver_hash, zero.solver_hash);
  EXPECT_EQ(timeline.net_hash, zero.net_hash);
  // The same input gives the same output: nothing else is read.
  const RankConfig again = ConfigureRank(Param(), OnRank(2, 3), &notes);
  EXPECT_EQ(again.param.SerializeAsString(), two.param.SerializeAsString());
}

TEST(RankConfigTest, ScalesAndWarmsUpTheLearningRateWhenAsked) {
  RankSetup setup = OnRank(1, 4);
  setup.scale_lr = true;
  setup.lr_warmup_iters = 100;
  std::vector<RankNote> notes;
  const RankConfig config = ConfigureRank(Param(), setup, &notes);
  EXPECT_FLOAT_EQ(config.param.base_lr(), 0.4f);
  EXPECT_EQ(config.param.warmup_iter(), 100);
  EXPECT_FLOAT_EQ(config.param.warmup_start_factor(), 0.25f);
  ASSERT_EQ(notes.size(), 2u);
  EXPECT_EQ(notes[0].text, "--scale_lr: base_lr 0.1 x 4 ranks = 0.4");
  EXPECT_EQ(notes[1].text,
            "--lr_warmup_iters: the learning rate rises linearly from 0.25 x to 1 x over the "
            "first 100 iterations");
  // The solver type is upgraded on every rank alike.
  EXPECT_EQ(config.param.type(), "Nesterov");
}

TEST(RankConfigTest, RefusesFewerTestBatchesThanRanksKeepingTheNotes) {
  std::vector<RankNote> notes;
  try {
    ConfigureRank(Param(), OnRank(0, 6), &notes);
    ADD_FAILURE() << "no Error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what())
                  .find("solver: test_iter #0 is 5, fewer than the 6 ranks; the ranks split the "
                        "test batches among them, and each needs one"),
              std::string::npos)
        << error.what();
  }
  EXPECT_EQ(notes.size(), 1u);
}

TEST(RankConfigTest, ReadsTheNetFilesIn) {
  TempDir dir;
  const std::string net = dir.path() + "/net.prototxt";
  {
    std::ofstream out(net);
    out << "name: 'from_file' layer { name: 'in' type: 'Input' top: 'x' "
           "input_param { shape { dim: 1 } } }";
  }
  SolverParameter param = ParseText<SolverParameter>("base_lr: 0.1 test_iter: 1");
  param.set_net(net);
  param.add_test_net(net);
  const SolverParameter read = ReadSolverNetFiles(param);
  EXPECT_FALSE(read.has_net());
  EXPECT_EQ(read.net_param().name(), "from_file");
  EXPECT_EQ(read.test_net_size(), 0);
  ASSERT_EQ(read.test_net_param_size(), 1);
  EXPECT_EQ(read.test_net_param(0).name(), "from_file");
  param.set_net(dir.path() + "/missing.prototxt");
  try {
    ReadSolverNetFiles(param);
    ADD_FAILURE() << "no Error";
  } catch (const Error& error) {
    EXPECT_EQ(std::string(error.what()).rfind("solver field net: ", 0), 0u) << error.what();
  }
  // Two training nets: left for the solver to refuse.
  param.set_train_net(net);
  EXPECT_EQ(ReadSolverNetFiles(param).net(), dir.path() + "/missing.prototxt");
}

}  // namespace
}  // namespace doppio
