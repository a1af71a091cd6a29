// Snapshots: file names and contents, restore to bit-identical training, and refusals.
#include <glog/logging.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <type_traits>

#include "doppio/solvers/sgd_solvers.hpp"
#include "doppio/solvers/snapshot_search.hpp"
#include "doppio/util/io.hpp"
#include "log_capture.hpp"
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
  // Param over another net (same inputs as LeastSquaresNet).
  SolverParameter Param(const std::string& type, const std::string& extra,
                        const std::string& net) const {
    SolverParameter param = Param(type, extra);
    *param.mutable_net_param() = ParseText<NetParameter>(net);
    return param;
  }
  TempDir dir_;
};
TYPED_TEST_SUITE(SnapshotTest, TestDtypes);

const char* const kTypes[] = {"SGD", "Nesterov", "AdaGrad", "RMSProp", "AdaDelta", "Adam"};

// Nets whose parameter arena (latest layer first) is not in Caffe's order (layer order): three
// inner products with weights and biases, LeNet's shape of layers...
const char* const kLayeredNet = R"(
  name: 'layered'
  layer { name: 'data' type: 'Input' top: 'x' top: 'y'
          input_param { shape { dim: 4 dim: 3 } shape { dim: 4 dim: 1 } } }
  layer { name: 'ip1' type: 'InnerProduct' bottom: 'x' top: 'h1'
          inner_product_param { num_output: 5 weight_filler { type: 'gaussian' std: 0.5 }
                                bias_filler { type: 'constant' value: 0.1 } } }
  layer { name: 'relu1' type: 'ReLU' bottom: 'h1' top: 'h1' }
  layer { name: 'ip2' type: 'InnerProduct' bottom: 'h1' top: 'h2'
          inner_product_param { num_output: 4 weight_filler { type: 'gaussian' std: 0.5 }
                                bias_filler { type: 'constant' value: 0.1 } } }
  layer { name: 'relu2' type: 'ReLU' bottom: 'h2' top: 'h2' }
  layer { name: 'ip3' type: 'InnerProduct' bottom: 'h2' top: 'out'
          inner_product_param { num_output: 1 weight_filler { type: 'gaussian' std: 0.5 } } }
  layer { name: 'loss' type: 'EuclideanLoss' bottom: 'out' bottom: 'y' top: 'loss' })";
// ...and one whose weight 'W' belongs to enc1 and is shared by enc2, whose own learnable
// param is then only its bias.
const char* const kSharedNet = R"(
  name: 'shared'
  layer { name: 'data' type: 'Input' top: 'x' top: 'y'
          input_param { shape { dim: 4 dim: 3 } shape { dim: 4 dim: 1 } } }
  layer { name: 'enc1' type: 'InnerProduct' bottom: 'x' top: 'h1' param { name: 'W' }
          inner_product_param { num_output: 4 weight_filler { type: 'gaussian' std: 0.5 }
                                bias_filler { type: 'constant' value: 0.1 } } }
  layer { name: 'enc2' type: 'InnerProduct' bottom: 'x' top: 'h2' param { name: 'W' }
          inner_product_param { num_output: 4 weight_filler { type: 'gaussian' std: 0.5 }
                                bias_filler { type: 'gaussian' std: 0.5 } } }
  layer { name: 'sum' type: 'Eltwise' bottom: 'h1' bottom: 'h2' top: 'h' }
  layer { name: 'relu' type: 'ReLU' bottom: 'h' top: 'h' }
  layer { name: 'out' type: 'InnerProduct' bottom: 'h' top: 'out'
          inner_product_param { num_output: 1 weight_filler { type: 'gaussian' std: 0.5 } } }
  layer { name: 'loss' type: 'EuclideanLoss' bottom: 'out' bottom: 'y' top: 'loss' })";
const char* const kOrderNets[] = {kLayeredNet, kSharedNet};
// Two inner products of equal shapes: an unmarked state fits Caffe's order and the arena's.
const char* const kSymmetricNet = R"(
  name: 'symmetric'
  layer { name: 'data' type: 'Input' top: 'x' top: 'y'
          input_param { shape { dim: 4 dim: 3 } shape { dim: 4 dim: 1 } } }
  layer { name: 'ip1' type: 'InnerProduct' bottom: 'x' top: 'h1'
          inner_product_param { num_output: 3 weight_filler { type: 'gaussian' std: 0.5 }
                                bias_filler { type: 'constant' value: 0.1 } } }
  layer { name: 'relu1' type: 'ReLU' bottom: 'h1' top: 'h1' }
  layer { name: 'ip2' type: 'InnerProduct' bottom: 'h1' top: 'h2'
          inner_product_param { num_output: 3 weight_filler { type: 'gaussian' std: 0.5 }
                                bias_filler { type: 'constant' value: -0.1 } } }
  layer { name: 'sum' type: 'Reduction' bottom: 'h2' top: 'out' reduction_param { axis: 1 } }
  layer { name: 'loss' type: 'EuclideanLoss' bottom: 'out' bottom: 'y' top: 'loss' })";
// Iterations before the snapshot and after it; the step policy makes current_step matter.
constexpr int kBefore = 3;
constexpr int kAfter = 4;
const char* const kOrderExtra = "lr_policy: 'step' gamma: 0.5 stepsize: 2";

// A learnable parameter as Caffe's .solverstate indexes it.
template <typename Dtype>
struct CaffeParam {
  const Blob<Dtype>* blob;
  std::string layer;
  int blob_index;
};

// Caffe's learnable params, from its documented rule: every layer's blobs in layer order, blob
// order within a layer; a blob whose param name an earlier blob already has is that blob's,
// not listed again.
template <typename Dtype>
std::vector<CaffeParam<Dtype>> CaffeLearnableParams(const Net<Dtype>& net) {
  std::vector<CaffeParam<Dtype>> params;
  std::set<std::string> names;
  for (const auto& layer : net.layers()) {
    const LayerParameter& layer_param = layer->layer_param();
    for (int j = 0; j < static_cast<int>(layer->blobs().size()); ++j) {
      const std::string name = j < layer_param.param_size() ? layer_param.param(j).name() : "";
      if (!name.empty() && !names.insert(name).second) continue;
      params.push_back({layer->blobs()[j].get(), layer_param.name(), j});
    }
  }
  return params;
}

template <typename Dtype>
const SGDSolver<Dtype>& AsSGD(const Solver<Dtype>& solver) {
  return dynamic_cast<const SGDSolver<Dtype>&>(solver);
}

// The solver's in-memory history of `param` in history set `set`.
template <typename Dtype>
const Blob<Dtype>& HistoryOf(const Solver<Dtype>& solver, const Blob<Dtype>* param, int set) {
  const auto& arena = solver.net()->learnable_params();
  const std::size_t arena_id = std::find(arena.begin(), arena.end(), param) - arena.begin();
  EXPECT_LT(arena_id, arena.size());
  return *AsSGD(solver).history()[set * arena.size() + arena_id];
}

template <typename Dtype>
int HistorySets(const Solver<Dtype>& solver) {
  return static_cast<int>(AsSGD(solver).history().size() / solver.net()->learnable_params().size());
}

template <typename Dtype>
BlobProto CaffeBlob(const Blob<Dtype>& blob) {
  BlobProto proto;
  for (int d : blob.shape()) proto.mutable_shape()->add_dim(d);
  for (int i = 0; i < blob.count(); ++i) {
    if (std::is_same<Dtype, double>::value) {
      proto.add_double_data(blob.cpu_data()[i]);
    } else {
      proto.add_data(static_cast<float>(blob.cpu_data()[i]));
    }
  }
  return proto;
}

template <typename Dtype>
std::vector<Dtype> Values(const BlobProto& proto) {
  if (std::is_same<Dtype, double>::value) {
    return std::vector<Dtype>(proto.double_data().begin(), proto.double_data().end());
  }
  return std::vector<Dtype>(proto.data().begin(), proto.data().end());
}

template <typename Dtype>
std::vector<Dtype> Values(const Blob<Dtype>& blob) {
  return std::vector<Dtype>(blob.cpu_data(), blob.cpu_data() + blob.count());
}

// Writes `solver`'s weights and a .solverstate built here, not by Doppio's writer: in Caffe's
// layout (history[k * n + i]: set k of Caffe's i-th learnable param), or, with arena_order, in
// the order of the parameter arena that Doppio's states had before they followed Caffe's.
// Returns the state's path.
template <typename Dtype>
std::string WriteHandMadeState(const Solver<Dtype>& solver, const std::string& prefix,
                               bool arena_order) {
  const std::string weights_file = prefix + ".caffemodel";
  NetParameter weights;
  solver.net()->ToProto(&weights);
  WriteProtoToBinaryFile(weights, weights_file);
  SolverState state;
  state.set_iter(solver.iter());
  state.set_learned_net(weights_file);
  state.set_current_step(solver.current_step());
  for (int set = 0; set < HistorySets(solver); ++set) {
    if (arena_order) {
      for (const Blob<Dtype>* param : solver.net()->learnable_params()) {
        *state.add_history() = CaffeBlob(HistoryOf(solver, param, set));
      }
    } else {
      for (const auto& param : CaffeLearnableParams(*solver.net())) {
        *state.add_history() = CaffeBlob(HistoryOf(solver, param.blob, set));
      }
    }
  }
  const std::string state_file = prefix + ".solverstate";
  std::string bytes;
  EXPECT_TRUE(state.SerializeToString(&bytes));
  WriteFile(state_file, bytes);
  return state_file;
}

// Restores a solver with another seed from `state_file`, runs kAfter iterations and expects
// the weights `reference` reached running straight through, bit for bit.
template <typename Dtype>
void ExpectResumesIdentically(SolverParameter param, const std::string& state_file,
                              const Solver<Dtype>& reference) {
  param.set_random_seed(99);
  auto resumed = MakeSolver<Dtype>(param);
  resumed->Restore(state_file);
  EXPECT_EQ(resumed->iter(), kBefore);
  resumed->Step(kAfter);
  EXPECT_EQ(resumed->iter(), reference.iter());
  EXPECT_EQ(resumed->current_step(), reference.current_step());
  EXPECT_EQ(Weights(*resumed), Weights(reference));
}

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

// snapshot_format: HDF5 writes Caffe's .caffemodel.h5 and .solverstate.h5, and resuming from
// them continues bit for bit as from the binary files: every method, and nets whose arena is
// not in Caffe's order or that share a weight.
TYPED_TEST(SnapshotTest, Hdf5SnapshotRestoresBitIdentically) {
  using Dtype = TypeParam;
  const std::string extra =
      "lr_policy: 'multistep' gamma: 0.5 stepvalue: 2 stepvalue: 5 snapshot_format: HDF5";
  std::vector<std::pair<std::string, SolverParameter>> cases;
  for (const std::string type : kTypes) cases.emplace_back(type, this->Param(type, extra));
  cases.emplace_back("layered net", this->Param("Adam", extra, kLayeredNet));
  cases.emplace_back("shared weight", this->Param("SGD", extra, kSharedNet));
  for (const auto& [name, param] : cases) {
    SCOPED_TRACE(name);
    auto uninterrupted = MakeSolver<Dtype>(param);
    uninterrupted->Step(8);
    auto first = MakeSolver<Dtype>(param);
    first->Step(3);
    first->Snapshot();
    const std::string state = this->Prefix() + "_iter_3.solverstate.h5";
    ASSERT_TRUE(fs::exists(state));
    ASSERT_TRUE(fs::exists(this->Prefix() + "_iter_3.caffemodel.h5"));
    EXPECT_FALSE(fs::exists(this->Prefix() + "_iter_3.solverstate"));

    SolverParameter other_seed = param;
    other_seed.set_random_seed(99);
    auto resumed = MakeSolver<Dtype>(other_seed);
    resumed->Restore(state);
    EXPECT_EQ(resumed->iter(), 3);
    EXPECT_EQ(Weights(*resumed), Weights(*first));
    resumed->Step(5);
    EXPECT_EQ(resumed->current_step(), uninterrupted->current_step());
    // Bit-identical, not merely close.
    EXPECT_EQ(Weights(*resumed), Weights(*uninterrupted));
  }
}

TYPED_TEST(SnapshotTest, Hdf5SnapshotsAreAtomicAndRefuseWhatTheyCannotHold) {
  using Dtype = TypeParam;
  auto solver = MakeSolver<Dtype>(this->Param("SGD", "snapshot_format: HDF5"));
  solver->Step(2);
  solver->Snapshot();
  const std::string model = this->Prefix() + "_iter_2.caffemodel.h5";
  const std::string model_bytes = ReadFile(model);
  for (auto* blob : solver->net()->learnable_params()) blob->scale_data(Dtype(2));
  {
    ScopedWriteFault write_fault("caffemodel.h5");
    EXPECT_ERROR_WITH(solver->Snapshot(), "caffemodel.h5", "write failed");
  }
  EXPECT_EQ(ReadFile(model), model_bytes);
  auto restored = MakeSolver<Dtype>(this->Param("SGD"));
  restored->Restore(this->Prefix() + "_iter_2.solverstate.h5");
  EXPECT_EQ(restored->iter(), 2);

  // Caffe's layout names weights by layer: two layers of one name are refused at set-up.
  const char* const twins = R"(
    layer { name: 'data' type: 'Input' top: 'x' top: 'y'
            input_param { shape { dim: 4 dim: 3 } shape { dim: 4 dim: 1 } } }
    layer { name: 'ip' type: 'InnerProduct' bottom: 'x' top: 'h'
            inner_product_param { num_output: 2 } }
    layer { name: 'ip' type: 'InnerProduct' bottom: 'h' top: 'out'
            inner_product_param { num_output: 1 } }
    layer { name: 'loss' type: 'EuclideanLoss' bottom: 'out' bottom: 'y' top: 'loss' })";
  EXPECT_ERROR_WITH(MakeSolver<Dtype>(this->Param("SGD", "snapshot_format: HDF5", twins)),
                    "snapshot_format HDF5", "two layers named 'ip'");
  EXPECT_NO_THROW(MakeSolver<Dtype>(this->Param("SGD", "", twins)));
}

TYPED_TEST(SnapshotTest, StateIsWrittenInCaffesOrderAndResumes) {
  using Dtype = TypeParam;
  for (const std::string net : kOrderNets) {
    for (const std::string type : kTypes) {
      const SolverParameter param = this->Param(type, kOrderExtra, net);
      SCOPED_TRACE(type + " on " + param.net_param().name());
      auto solver = MakeSolver<Dtype>(param);
      solver->Step(kBefore);
      solver->Snapshot();
      const std::string state_file =
          this->Prefix() + "_iter_" + std::to_string(kBefore) + ".solverstate";
      SolverState state;
      ReadProtoFromBinaryFile(state_file, &state);
      EXPECT_TRUE(state.history_in_caffe_order());
      const auto params = CaffeLearnableParams(*solver->net());
      const int n = static_cast<int>(params.size());
      ASSERT_EQ(state.history_size(), HistorySets(*solver) * n);
      for (int i = 0; i < state.history_size(); ++i) {
        const Blob<Dtype>& history = HistoryOf(*solver, params[i % n].blob, i / n);
        EXPECT_EQ(BlobProtoShape(state.history(i)), history.shape()) << "history " << i;
        EXPECT_EQ(Values<Dtype>(state.history(i)), Values(history)) << "history " << i;
      }
      // Doppio's own state resumes as training straight through.
      auto straight = MakeSolver<Dtype>(param);
      straight->Step(kBefore + kAfter);
      ExpectResumesIdentically(param, state_file, *straight);
    }
  }
}

TYPED_TEST(SnapshotTest, CaffesStateResumesIdentically) {
  using Dtype = TypeParam;
  // On kSymmetricNet Caffe's state is read as Caffe's although it fits the arena order too.
  for (const std::string net : {kLayeredNet, kSharedNet, kSymmetricNet}) {
    for (const std::string type : kTypes) {
      const SolverParameter param = this->Param(type, kOrderExtra, net);
      SCOPED_TRACE(type + " on " + param.net_param().name());
      auto reference = MakeSolver<Dtype>(param);
      reference->Step(kBefore);
      const std::string state_file =
          WriteHandMadeState(*reference, this->dir_.path() + "/caffe", false);
      reference->Step(kAfter);
      LogCapture capture(google::WARNING);
      ExpectResumesIdentically(param, state_file, *reference);
      EXPECT_EQ(capture.lines, std::vector<std::string>());
    }
  }
}

TYPED_TEST(SnapshotTest, OldArenaOrderedStateResumesWithAWarning) {
  using Dtype = TypeParam;
  for (const std::string net : kOrderNets) {
    for (const std::string type : kTypes) {
      const SolverParameter param = this->Param(type, kOrderExtra, net);
      SCOPED_TRACE(type + " on " + param.net_param().name());
      auto reference = MakeSolver<Dtype>(param);
      reference->Step(kBefore);
      const std::string state_file =
          WriteHandMadeState(*reference, this->dir_.path() + "/arena", true);
      reference->Step(kAfter);
      LogCapture capture(google::WARNING);
      ExpectResumesIdentically(param, state_file, *reference);
      ASSERT_EQ(capture.lines.size(), 1u);
      EXPECT_NE(capture.lines[0].find(state_file), std::string::npos) << capture.lines[0];
      EXPECT_NE(capture.lines[0].find("arena"), std::string::npos) << capture.lines[0];
    }
  }
}

TYPED_TEST(SnapshotTest, StateFittingNeitherOrderIsRefused) {
  using Dtype = TypeParam;
  for (const std::string net : kOrderNets) {
    for (const std::string type : kTypes) {
      const SolverParameter param = this->Param(type, kOrderExtra, net);
      SCOPED_TRACE(type + " on " + param.net_param().name());
      auto solver = MakeSolver<Dtype>(param);
      solver->Step(1);
      const std::string state_file =
          WriteHandMadeState(*solver, this->dir_.path() + "/neither", false);
      SolverState state;
      ReadProtoFromBinaryFile(state_file, &state);
      // Caffe's learnable param 2 (ip2's weight; enc2's bias, its first blob being enc1's) in
      // the last history set, given one more axis.
      const auto params = CaffeLearnableParams(*solver->net());
      const int n = static_cast<int>(params.size());
      const int bad = (HistorySets(*solver) - 1) * n + 2;
      state.mutable_history(bad)->mutable_shape()->add_dim(1);
      std::string bytes;
      ASSERT_TRUE(state.SerializeToString(&bytes));
      WriteFile(state_file, bytes);
      auto fresh = MakeSolver<Dtype>(param);
      const auto before = Weights(*fresh);
      EXPECT_ERROR_WITH(
          fresh->Restore(state_file), state_file, "history blob " + std::to_string(bad) + " ",
          "layer '" + params[2].layer + "', blob " + std::to_string(params[2].blob_index),
          "different net");
      EXPECT_EQ(fresh->iter(), 0);
      EXPECT_EQ(Weights(*fresh), before);

      // Marked as Doppio's Caffe-ordered state, an arena-ordered history is refused too.
      const std::string arena_file =
          WriteHandMadeState(*solver, this->dir_.path() + "/marked", true);
      ReadProtoFromBinaryFile(arena_file, &state);
      state.set_history_in_caffe_order(true);
      ASSERT_TRUE(state.SerializeToString(&bytes));
      WriteFile(arena_file, bytes);
      EXPECT_ERROR_WITH(fresh->Restore(arena_file), arena_file, "history blob 0 ",
                        "layer '" + params[0].layer + "', blob 0", "different net");
      EXPECT_EQ(fresh->iter(), 0);
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
  // The error names both nets.
  EXPECT_ERROR_WITH(third->Restore(state), "different net: net 'lsq', not 'renamed'");
}

TYPED_TEST(SnapshotTest, NewestCompleteSnapshotPassesOverIncompleteOnes) {
  using Dtype = TypeParam;
  std::vector<std::string> passed_over;
  EXPECT_FALSE(NewestCompleteSnapshot(this->Prefix(), &passed_over));
  EXPECT_FALSE(NewestCompleteSnapshot(this->dir_.path() + "/no/such/folder/lsq", &passed_over));
  auto solver = MakeSolver<Dtype>(this->Param("SGD"));
  for (int iter : {2, 10}) {
    solver->Step(iter - solver->iter());
    solver->Snapshot();
  }
  // Numbers, not text, decide which is newest (10 > 9 > 2); a name that is not the prefix's,
  // or another snapshot_prefix that begins the same, is not a candidate.
  auto found = NewestCompleteSnapshot(this->Prefix(), &passed_over);
  ASSERT_TRUE(found);
  EXPECT_EQ(found->state_file, this->Prefix() + "_iter_10.solverstate");
  EXPECT_EQ(found->iter, 10);
  EXPECT_TRUE(passed_over.empty());
  fs::copy_file(this->Prefix() + "_iter_10.solverstate", this->Prefix() + "x_iter_99.solverstate");
  fs::copy_file(this->Prefix() + "_iter_10.solverstate",
                this->Prefix() + "_iter_77.solverstate.tmp");
  // Newer, but: a state whose weights were never written (a job killed in between), a
  // truncated state, a state of another iteration than its name says.
  solver->Step(1);
  solver->Snapshot();
  fs::remove(this->Prefix() + "_iter_11.caffemodel");
  std::ofstream(this->Prefix() + "_iter_12.solverstate") << "\x08";
  fs::copy_file(this->Prefix() + "_iter_2.solverstate", this->Prefix() + "_iter_13.solverstate");
  found = NewestCompleteSnapshot(this->Prefix(), &passed_over);
  ASSERT_TRUE(found);
  EXPECT_EQ(found->state_file, this->Prefix() + "_iter_10.solverstate");
  ASSERT_EQ(passed_over.size(), 3u);
  EXPECT_CONTAINS(passed_over[0], "_iter_13.solverstate: holds iteration 2, not the 13");
  EXPECT_CONTAINS(passed_over[1], "_iter_12.solverstate");
  EXPECT_CONTAINS(passed_over[2], "_iter_11.caffemodel' does not exist");
  // And it restores.
  auto resumed = MakeSolver<Dtype>(this->Param("SGD"));
  resumed->Restore(found->state_file);
  EXPECT_EQ(resumed->iter(), 10);
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
