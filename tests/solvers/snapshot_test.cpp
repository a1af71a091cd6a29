// Snapshots: file names and contents, restore to bit-identical training, and refusals.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "doppio/util/io.hpp"
#include "solver_test_util.hpp"
#include "write_fault.hpp"

namespace doppio {
namespace {

using namespace solver_test;
namespace fs = std::filesystem;

template <typename Dtype>
class SnapshotTest : public ::testing::Test {
 protected:
  std::string Prefix() const { return dir_.path() + "/lsq"; }
  SolverParameter Param(const std::string& type, const std::string& extra = "") const {
    std::string fields = "type: '" + type + "' snapshot_prefix: '" + Prefix() + "' " + extra;
    if (type == "SGD" || type == "Nesterov") fields += " momentum: 0.9 weight_decay: 0.01";
    if (type == "AdaDelta") fields += " momentum: 0.9 base_lr: 1";
    if (type == "Adam") fields += " momentum: 0.9";
    return LeastSquaresSolver(fields);
  }
  TempDir dir_;
};
TYPED_TEST_SUITE(SnapshotTest, TestDtypes);

const char* const kTypes[] = {"SGD", "Nesterov", "AdaGrad", "RMSProp", "AdaDelta", "Adam"};

TYPED_TEST(SnapshotTest, RestoreContinuesBitIdentically) {
  using Dtype = TypeParam;
  for (const std::string type : kTypes) {
    SCOPED_TRACE(type);
    const std::string extra =
        "lr_policy: 'multistep' gamma: 0.5 stepvalue: 2 stepvalue: 5 iter_size: 2";
    auto uninterrupted = MakeSolver<Dtype>(this->Param(type, extra));
    uninterrupted->Step(8);

    auto first = MakeSolver<Dtype>(this->Param(type, extra));
    first->Step(3);
    first->Snapshot();
    const std::string state = this->Prefix() + "_iter_3.solverstate";
    ASSERT_TRUE(fs::exists(state));
    ASSERT_TRUE(fs::exists(this->Prefix() + "_iter_3.caffemodel"));

    // A different seed: the weights must come from the snapshot, not the fillers.
    SolverParameter other_seed = this->Param(type, extra);
    other_seed.set_random_seed(99);
    auto resumed = MakeSolver<Dtype>(other_seed);
    resumed->Restore(state);
    EXPECT_EQ(resumed->iter(), 3);
    EXPECT_EQ(resumed->current_step(), first->current_step());
    EXPECT_EQ(Weights(*resumed), Weights(*first));
    resumed->Step(5);
    EXPECT_EQ(resumed->iter(), 8);
    EXPECT_EQ(resumed->current_step(), 2);
    const auto expected = Weights(*uninterrupted);
    const auto actual = Weights(*resumed);
    ASSERT_EQ(actual.size(), expected.size());
    for (std::size_t i = 0; i < actual.size(); ++i) {
      // Bit-identical, not merely close.
      EXPECT_EQ(actual[i], expected[i]) << "value " << i;
    }
  }
}

TYPED_TEST(SnapshotTest, SolveWritesSnapshotsAndResumes) {
  using Dtype = TypeParam;
  SolverParameter param = this->Param("SGD", "snapshot: 2 snapshot_after_train: true");
  param.set_max_iter(5);
  auto solver = MakeSolver<Dtype>(param);
  solver->Solve();
  for (int iter : {2, 4, 5}) {
    for (const char* extension : {".caffemodel", ".solverstate"}) {
      EXPECT_TRUE(fs::exists(this->Prefix() + "_iter_" + std::to_string(iter) + extension))
          << iter << extension;
    }
  }
  EXPECT_FALSE(fs::exists(this->Prefix() + "_iter_3.caffemodel"));
  // The .caffemodel is a NetParameter with Caffe's layer/blobs layout.
  NetParameter weights;
  ReadProtoFromBinaryFile(this->Prefix() + "_iter_5.caffemodel", &weights);
  EXPECT_EQ(weights.name(), "lsq");
  bool found = false;
  for (const auto& layer : weights.layer()) {
    if (layer.name() != "ip1") continue;
    found = true;
    EXPECT_EQ(layer.type(), "InnerProduct");
    ASSERT_EQ(layer.blobs_size(), 2);
    EXPECT_EQ(BlobProtoShape(layer.blobs(0)), (std::vector<int>{5, 3}));
  }
  EXPECT_TRUE(found);
  SolverState state;
  ReadProtoFromBinaryFile(this->Prefix() + "_iter_4.solverstate", &state);
  EXPECT_EQ(state.iter(), 4);
  EXPECT_EQ(state.learned_net(), this->Prefix() + "_iter_4.caffemodel");
  EXPECT_EQ(state.history_size(), 4);

  // Resume from iteration 4 to a longer max_iter: same weights as training straight through.
  param.set_max_iter(7);
  param.set_snapshot_after_train(false);
  auto resumed = MakeSolver<Dtype>(param);
  resumed->Solve(this->Prefix() + "_iter_4.solverstate");
  EXPECT_EQ(resumed->iter(), 7);
  auto straight = MakeSolver<Dtype>(param);
  straight->Solve();
  EXPECT_EQ(Weights(*resumed), Weights(*straight));
}

TYPED_TEST(SnapshotTest, RestoreFindsMovedWeightsBesideTheState) {
  using Dtype = TypeParam;
  auto solver = MakeSolver<Dtype>(this->Param("Adam"));
  solver->Step(2);
  solver->Snapshot();
  TempDir moved;
  for (const char* extension : {".caffemodel", ".solverstate"}) {
    fs::rename(this->Prefix() + "_iter_2" + extension, moved.path() + "/lsq_iter_2" + extension);
  }
  auto restored = MakeSolver<Dtype>(this->Param("Adam"));
  restored->Restore(moved.path() + "/lsq_iter_2.solverstate");
  EXPECT_EQ(Weights(*restored), Weights(*solver));
}

TYPED_TEST(SnapshotTest, SnapshotOfADifferentNetIsRefused) {
  using Dtype = TypeParam;
  auto solver = MakeSolver<Dtype>(this->Param("SGD"));
  solver->Step(1);
  solver->Snapshot();
  const std::string state = this->Prefix() + "_iter_1.solverstate";
  // Same layer names, a wider hidden layer.
  SolverParameter wider = this->Param("SGD");
  *wider.mutable_net_param() = ParseText<NetParameter>(LeastSquaresNet(7));
  auto other = MakeSolver<Dtype>(wider);
  const auto before = Weights(*other);
  EXPECT_ERROR_WITH(other->Restore(state), "different net", "ip1", "5 3", "7 3");
  EXPECT_EQ(other->iter(), 0);
  EXPECT_EQ(Weights(*other), before);
  // Different layer names.
  SolverParameter renamed = this->Param("SGD");
  *renamed.mutable_net_param() = ParseText<NetParameter>(R"(
    name: 'renamed'
    layer { name: 'data' type: 'Input' top: 'x' top: 'y'
            input_param { shape { dim: 4 dim: 3 } shape { dim: 4 dim: 1 } } }
    layer { name: 'fc' type: 'InnerProduct' bottom: 'x' top: 'out'
            inner_product_param { num_output: 1 } }
    layer { name: 'loss' type: 'EuclideanLoss' bottom: 'out' bottom: 'y' top: 'loss' })");
  auto third = MakeSolver<Dtype>(renamed);
  EXPECT_ERROR_WITH(third->Restore(state), "different net", "fc");
  EXPECT_EQ(third->iter(), 0);
}

TYPED_TEST(SnapshotTest, StateOfAnotherSolverTypeIsRefused) {
  using Dtype = TypeParam;
  auto sgd = MakeSolver<Dtype>(this->Param("SGD"));
  sgd->Step(1);
  sgd->Snapshot();
  auto adam = MakeSolver<Dtype>(this->Param("Adam"));
  EXPECT_ERROR_WITH(adam->Restore(this->Prefix() + "_iter_1.solverstate"), "4 history blobs",
                    "Adam", "keeps 8");
  EXPECT_EQ(adam->iter(), 0);
}

TYPED_TEST(SnapshotTest, FilesThatAreNotSolverStatesAreRefused) {
  using Dtype = TypeParam;
  auto solver = MakeSolver<Dtype>(this->Param("SGD"));
  solver->Step(1);
  solver->Snapshot();
  auto fresh = MakeSolver<Dtype>(this->Param("SGD"));
  EXPECT_ERROR_WITH(fresh->Restore(this->Prefix() + "_iter_1.caffemodel"), "not a .solverstate");
  EXPECT_ERROR_WITH(fresh->Restore(this->dir_.path() + "/missing.solverstate"),
                    "missing.solverstate");
  const std::string garbage = this->dir_.path() + "/garbage.solverstate";
  WriteFile(garbage, "this is not a protocol buffer\n\xff\xff\xff");
  EXPECT_ERROR_WITH(fresh->Restore(garbage), "garbage.solverstate");
  // A negative learning-rate step, which "multistep" would use as an index (found by
  // tests/fuzz/solverstate_fuzzer).
  SolverState state;
  ReadProtoFromBinaryFile(this->Prefix() + "_iter_1.solverstate", &state);
  state.set_current_step(-1);
  const std::string negative = this->dir_.path() + "/negative.solverstate";
  WriteProtoToBinaryFile(state, negative);
  EXPECT_ERROR_WITH(fresh->Restore(negative), "negative.solverstate",
                    "negative learning-rate step -1");
  // A state whose weights file has gone.
  fs::remove(this->Prefix() + "_iter_1.caffemodel");
  EXPECT_ERROR_WITH(fresh->Restore(this->Prefix() + "_iter_1.solverstate"), "lsq_iter_1.caffemodel",
                    "does not exist");
  EXPECT_EQ(fresh->iter(), 0);
}

TYPED_TEST(SnapshotTest, FailedWriteLeavesThePreviousSnapshotIntact) {
  using Dtype = TypeParam;
  auto solver = MakeSolver<Dtype>(this->Param("SGD"));
  solver->Step(2);
  solver->Snapshot();
  const std::string model = this->Prefix() + "_iter_2.caffemodel";
  const std::string state = this->Prefix() + "_iter_2.solverstate";
  const std::string model_bytes = ReadFile(model);
  const std::string state_bytes = ReadFile(state);
  // Change the weights, then fail the rewrite of the same files half-way.
  for (auto* blob : solver->net()->learnable_params()) blob->scale_data(Dtype(2));
  for (const char* fault : {"caffemodel", "solverstate"}) {
    SCOPED_TRACE(fault);
    {
      ScopedWriteFault write_fault(fault);
      EXPECT_ERROR_WITH(solver->Snapshot(), fault, "write failed");
    }
    EXPECT_EQ(ReadFile(state), state_bytes);
    if (std::string(fault) == "caffemodel") EXPECT_EQ(ReadFile(model), model_bytes);
  }
  // No temporary file is left behind, and the old snapshot still restores.
  for (const auto& entry : fs::directory_iterator(this->dir_.path())) {
    EXPECT_EQ(entry.path().filename().string().find(".tmp"), std::string::npos) << entry.path();
  }
  // A failure during training stops it with the error; the snapshot before it survives.
  auto trainer = MakeSolver<Dtype>(this->Param("SGD", "snapshot: 2"));
  {
    ScopedWriteFault write_fault("_iter_4.");
    EXPECT_ERROR_WITH(trainer->Step(6), "lsq_iter_4", "write failed");
  }
  EXPECT_EQ(trainer->iter(), 4);
  EXPECT_FALSE(fs::exists(this->Prefix() + "_iter_4.caffemodel"));
  auto restored = MakeSolver<Dtype>(this->Param("SGD"));
  restored->Restore(state);
  EXPECT_EQ(restored->iter(), 2);
}

TYPED_TEST(SnapshotTest, UnwritableSnapshotDirectoryIsRefusedAtStartUp) {
  using Dtype = TypeParam;
  for (const std::string prefix :
       {this->dir_.path() + "/no/such/dir/lsq", std::string("/proc/doppio_snapshots")}) {
    SolverParameter param = this->Param("SGD", "snapshot: 10");
    param.set_snapshot_prefix(prefix);
    const std::string directory = fs::path(prefix).parent_path().string();
    EXPECT_ERROR_WITH(MakeSolver<Dtype>(param), "cannot write snapshots", "'" + directory + "'");
  }
  if (geteuid() != 0) {
    const std::string locked = this->dir_.path() + "/locked";
    fs::create_directory(locked);
    chmod(locked.c_str(), 0555);
    SolverParameter param = this->Param("SGD");
    param.set_snapshot_after_train(true);
    param.set_snapshot_prefix(locked + "/lsq");
    EXPECT_ERROR_WITH(MakeSolver<Dtype>(param), "cannot write snapshots", locked);
    chmod(locked.c_str(), 0755);
  }
  // Without any snapshot to write, the directory is not checked.
  SolverParameter quiet = this->Param("SGD");
  quiet.set_snapshot_prefix("/proc/doppio_snapshots");
  EXPECT_NO_THROW(MakeSolver<Dtype>(quiet));
}

TYPED_TEST(SnapshotTest, SnapshotDiffAndCurrentStepAreSaved) {
  using Dtype = TypeParam;
  auto solver = MakeSolver<Dtype>(this->Param(
      "SGD", "snapshot_diff: true lr_policy: 'multistep' gamma: 0.1 stepvalue: 1 stepvalue: 2"));
  solver->Step(3);
  solver->Snapshot();
  SolverState state;
  ReadProtoFromBinaryFile(this->Prefix() + "_iter_3.solverstate", &state);
  EXPECT_EQ(state.current_step(), 2);
  NetParameter weights;
  ReadProtoFromBinaryFile(this->Prefix() + "_iter_3.caffemodel", &weights);
  int with_diff = 0;
  for (const auto& layer : weights.layer()) {
    for (const auto& blob : layer.blobs()) with_diff += blob.diff_size() + blob.double_diff_size();
  }
  EXPECT_GT(with_diff, 0);
}

}  // namespace
}  // namespace doppio
