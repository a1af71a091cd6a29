// The solver loop: construction from every form of SolverParameter, the registry, test nets,
// loss smoothing, callbacks, outside requests, and refusals of bad parameters.
#include "doppio/solvers/solver.hpp"

#include <glog/logging.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "doppio/solvers/lr_policy.hpp"
#include "doppio/util/io.hpp"
#include "solver_test_util.hpp"
#include "test_util.hpp"

namespace doppio {
namespace {

using namespace solver_test;
namespace fs = std::filesystem;

template <typename Dtype>
class SolverTest : public ::testing::Test {
 protected:
  // Writes the least-squares net to a file and returns its path.
  std::string NetFile(const std::string& name = "net.prototxt") {
    const std::string path = dir_.path() + "/" + name;
    WriteFile(path, LeastSquaresNet());
    return path;
  }
  TempDir dir_;
};
TYPED_TEST_SUITE(SolverTest, TestDtypes);

TYPED_TEST(SolverTest, RegistryKnowsEverySolverType) {
  const auto types = SolverRegistry<TypeParam>::Types();
  for (const std::string type : {"SGD", "Nesterov", "AdaGrad", "RMSProp", "AdaDelta", "Adam"}) {
    EXPECT_NE(std::find(types.begin(), types.end(), type), types.end()) << type;
    auto solver = MakeSolver<TypeParam>(LeastSquaresSolver("type: '" + type + "'"));
    EXPECT_EQ(solver->type(), type);
  }
}

TYPED_TEST(SolverTest, LegacySolverTypeEnumSelectsTheSolver) {
  const std::pair<const char*, const char*> cases[] = {
      {"SGD", "SGD"},         {"NESTEROV", "Nesterov"}, {"ADAGRAD", "AdaGrad"},
      {"RMSPROP", "RMSProp"}, {"ADADELTA", "AdaDelta"}, {"ADAM", "Adam"}};
  for (const auto& entry : cases) {
    auto solver =
        MakeSolver<TypeParam>(LeastSquaresSolver(std::string("solver_type: ") + entry.first));
    EXPECT_EQ(std::string(solver->type()), entry.second);
  }
  EXPECT_ERROR_WITH(MakeSolver<TypeParam>(LeastSquaresSolver("solver_type: ADAM type: 'SGD'")),
                    "solver_type", "ADAM", "'SGD'");
  // Agreeing fields are fine.
  EXPECT_NO_THROW(MakeSolver<TypeParam>(LeastSquaresSolver("solver_type: ADAM type: 'Adam'")));
}

TYPED_TEST(SolverTest, UnknownSolverTypeIsAnErrorNamingIt) {
  EXPECT_ERROR_WITH(MakeSolver<TypeParam>(LeastSquaresSolver("type: 'LBFGS'")),
                    "unknown solver type 'LBFGS'", "Adam", "SGD");
}

TYPED_TEST(SolverTest, UnknownLrPolicyIsAnErrorNamingIt) {
  SolverParameter param = LeastSquaresSolver("");
  param.set_lr_policy("cosine");
  EXPECT_ERROR_WITH(MakeSolver<TypeParam>(param), "unknown lr_policy 'cosine'");
}

TYPED_TEST(SolverTest, BadParametersAreErrorsNamingTheField) {
  const std::pair<const char*, const char*> cases[] = {
      {"regularization_type: 'L3' weight_decay: 0.1", "regularization_type 'L3'"},
      {"iter_size: 0", "iter_size"},
      {"average_loss: 0", "average_loss"},
      {"max_iter: -1", "max_iter"},
      {"type: 'AdaGrad' momentum: 0.9", "momentum"},
      {"type: 'RMSProp' momentum: 0.9", "momentum"},
      {"type: 'RMSProp' rms_decay: 1.5", "rms_decay"},
      {"lr_policy: 'step'", "stepsize"},
      {"test_iter: 1 test_net_param { name: 'a' } test_net_param { name: 'b' }", "test_iter"},
      {"test_state { stage: 'a' }", "test_state"},
  };
  for (const auto& entry : cases) {
    SCOPED_TRACE(entry.first);
    EXPECT_ERROR_WITH(MakeSolver<TypeParam>(LeastSquaresSolver(entry.first)), entry.second);
  }
}

TYPED_TEST(SolverTest, NeedsExactlyOneTrainingNet) {
  SolverParameter none = ParseText<SolverParameter>("base_lr: 0.1 lr_policy: 'fixed'");
  EXPECT_ERROR_WITH(MakeSolver<TypeParam>(none), "no training net", "train_net");
  SolverParameter two = LeastSquaresSolver("");
  two.set_train_net(this->NetFile());
  EXPECT_ERROR_WITH(MakeSolver<TypeParam>(two), "only one", "2 are set");
}

TYPED_TEST(SolverTest, MissingNetFileIsAnErrorNamingIt) {
  for (const char* field : {"net", "train_net"}) {
    SolverParameter param = ParseText<SolverParameter>(
        std::string("base_lr: 0.1 lr_policy: 'fixed' snapshot_after_train: false ") + field +
        ": '" + this->dir_.path() + "/absent.prototxt'");
    EXPECT_ERROR_WITH(MakeSolver<TypeParam>(param), field, "absent.prototxt");
  }
}

TYPED_TEST(SolverTest, NetFromFileAndGenericTestNets) {
  // `net` serves training and, once per test_iter, testing.
  SolverParameter param = ParseText<SolverParameter>(
      "base_lr: 0.01 lr_policy: 'fixed' snapshot_after_train: false random_seed: 1 "
      "test_iter: 2 test_iter: 3 test_interval: 4 net: '" +
      this->NetFile() + "'");
  auto solver = MakeSolver<TypeParam>(param);
  EXPECT_EQ(solver->net()->phase(), TRAIN);
  ASSERT_EQ(solver->test_nets().size(), 2u);
  for (const auto& net : solver->test_nets()) EXPECT_EQ(net->phase(), TEST);
}

TYPED_TEST(SolverTest, SeveralTestNetsShareTheTrainedWeights) {
  const std::string net = LeastSquaresNet();
  SolverParameter param = LeastSquaresSolver(
      "test_iter: 3 test_iter: 2 test_interval: 5 test_compute_loss: true "
      "test_net_param { " +
      net + " } test_net: '" + this->NetFile() + "'");
  auto solver = MakeSolver<TypeParam>(param);
  ASSERT_EQ(solver->test_nets().size(), 2u);
  // Fill the test nets' inputs; the test runs at iterations 0 and 5 of Step(6).
  for (const auto& test_net : solver->test_nets()) FillIterationData(*test_net, 100);
  solver->Step(6);
  // After testing, the test nets read the training net's weights.
  for (const auto& test_net : solver->test_nets()) {
    auto trained = solver->net()->layer_by_name("ip1")->blobs()[0];
    auto tested = test_net->layer_by_name("ip1")->blobs()[0];
    EXPECT_EQ(tested->cpu_data()[0], trained->cpu_data()[0]);
  }
  // A test (net #1 last, 2 batches of the same data) reports its mean loss.
  solver->TestAll();
  ASSERT_EQ(solver->last_test_scores().size(), 1u);
  TypeParam loss = 0;
  solver->test_nets()[1]->Forward(&loss);
  EXPECT_NEAR(solver->last_test_scores()[0], loss, 1e-5);
}

TYPED_TEST(SolverTest, EveryTypeHandsItsCpuOptionsToEveryLayerOfItsNets) {
  CpuOptions options;
  options.onednn_winograd = false;
  const std::string net = LeastSquaresNet();
  for (const std::string type : {"SGD", "Nesterov", "AdaGrad", "RMSProp", "AdaDelta", "Adam"}) {
    auto solver = SolverRegistry<TypeParam>::CreateSolver(
        LeastSquaresSolver("type: '" + type + "' test_iter: 1 test_interval: 5 test_net_param { " +
                           net + " }"),
        nullptr, options);
    ASSERT_EQ(solver->test_nets().size(), 1u);
    for (const Net<TypeParam>* each : {solver->net().get(), solver->test_nets()[0].get()}) {
      EXPECT_FALSE(each->cpu_options().onednn_winograd) << type;
      for (const auto& layer : each->layers()) {
        EXPECT_FALSE(layer->cpu_options().onednn_winograd) << type << " " << layer->name();
      }
    }
  }
}

TYPED_TEST(SolverTest, TestInitializationFalseSkipsIterationZero) {
  SolverParameter param =
      LeastSquaresSolver("test_iter: 1 test_interval: 3 test_initialization: false");
  param.clear_net_param();
  *param.mutable_train_net_param() = ParseText<NetParameter>(LeastSquaresNet());
  *param.add_test_net_param() = ParseText<NetParameter>(LeastSquaresNet());
  auto solver = MakeSolver<TypeParam>(param);
  FillIterationData(*solver->test_nets()[0], 0);
  solver->Step(1);
  EXPECT_TRUE(solver->last_test_scores().empty());
  solver->Step(3);
  EXPECT_EQ(solver->last_test_scores().size(), 1u);
}

TYPED_TEST(SolverTest, AverageLossSmoothsTheDisplayedLoss) {
  auto solver = MakeSolver<TypeParam>(LeastSquaresSolver("average_loss: 3 base_lr: 0"));
  // With base_lr 0 the weights stay put, so each iteration's loss is a plain forward.
  std::vector<TypeParam> losses;
  auto probe = MakeSolver<TypeParam>(LeastSquaresSolver("average_loss: 3 base_lr: 0"));
  for (int iter = 0; iter < 5; ++iter) {
    FillIterationData(*probe->net(), iter);
    TypeParam loss = 0;
    probe->net()->Forward(&loss);
    losses.push_back(loss);
  }
  solver->Step(5);
  const TypeParam expected = (losses[2] + losses[3] + losses[4]) / 3;
  EXPECT_NEAR(solver->smoothed_loss(), expected, 1e-5 * (1 + std::fabs(expected)));
}

TYPED_TEST(SolverTest, CallbacksRunAroundEachUpdate) {
  auto solver = MakeSolver<TypeParam>(LeastSquaresSolver("iter_size: 2"));
  std::vector<std::string> events;
  Solver<TypeParam>* raw = solver.get();
  std::vector<TypeParam> weights_at_ready;
  solver->add_callbacks({[&] { events.push_back("start " + std::to_string(raw->iter())); },
                         [&] {
                           events.push_back("ready " + std::to_string(raw->iter()));
                           weights_at_ready = Weights(*raw);
                         }});
  const auto initial = Weights(*solver);
  solver->Step(2);
  EXPECT_EQ(events, (std::vector<std::string>{"start 0", "ready 0", "start 1", "ready 1"}));
  // on_gradients_ready comes before the update of its iteration.
  EXPECT_NE(weights_at_ready, Weights(*solver));
  EXPECT_NE(initial, Weights(*solver));
}

TYPED_TEST(SolverTest, ParallelHooksSkipUpdatesAndReplaceTestScores) {
  auto solver = MakeSolver<TypeParam>(
      LeastSquaresSolver("test_iter: 2 test_interval: 2 test_compute_loss: true"));
  Solver<TypeParam>* raw = solver.get();
  FillIterationData(*raw->test_nets()[0], 50);
  std::vector<std::string> events;
  std::vector<double> seen;
  SolverCallbacks callbacks;
  // Updates on odd iterations only.
  callbacks.apply_update = [&] { return raw->iter() % 2 == 1; };
  callbacks.on_update_applied = [&] { events.push_back("applied " + std::to_string(raw->iter())); };
  callbacks.on_test_scores = [&](int id, std::vector<double>* means) {
    EXPECT_EQ(id, 0);
    seen = *means;
    for (double& value : *means) value = 7.5;
  };
  solver->add_callbacks(callbacks);
  const auto initial = Weights(*solver);
  solver->Step(1);
  EXPECT_EQ(Weights(*solver), initial);
  solver->Step(1);
  EXPECT_NE(Weights(*solver), initial);
  EXPECT_EQ(events, (std::vector<std::string>{"applied 0", "applied 1"}));
  // One output (the loss) plus the test loss; the replaced values are what is reported.
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0], seen[1]);
  ASSERT_EQ(solver->last_test_scores().size(), 1u);
  EXPECT_EQ(solver->last_test_scores()[0], TypeParam(7.5));
}

TYPED_TEST(SolverTest, StopAndSnapshotRequests) {
  SolverParameter param = LeastSquaresSolver("snapshot_prefix: '" + this->dir_.path() + "/r'");
  param.set_max_iter(100);
  param.set_snapshot_after_train(true);
  auto solver = MakeSolver<TypeParam>(param);
  int calls = 0;
  solver->SetActionFunction([&] {
    ++calls;
    if (calls == 3) return SolverAction::SNAPSHOT;
    if (calls == 6) return SolverAction::STOP;
    return SolverAction::NONE;
  });
  solver->Solve();
  EXPECT_TRUE(solver->requested_early_exit());
  EXPECT_EQ(solver->iter(), 6);
  EXPECT_TRUE(fs::exists(this->dir_.path() + "/r_iter_3.solverstate"));
  // snapshot_after_train also writes when training stops early.
  EXPECT_TRUE(fs::exists(this->dir_.path() + "/r_iter_6.solverstate"));
  EXPECT_FALSE(fs::exists(this->dir_.path() + "/r_iter_100.solverstate"));
}

TYPED_TEST(SolverTest, NonFiniteLossStopsNamingTheIteration) {
  auto solver = MakeSolver<TypeParam>(LeastSquaresSolver("max_iter: 10"), /*nan_at=*/3);
  EXPECT_ERROR_WITH(solver->Step(10), "Iteration 3", "nan");
  EXPECT_EQ(solver->iter(), 3);
  // With the flag the solver goes on (and the NaN spreads into the weights).
  auto lenient = MakeSolver<TypeParam>(LeastSquaresSolver("max_iter: 10"), 3);
  lenient->set_allow_nonfinite(true);
  EXPECT_NO_THROW(lenient->Step(10));
  EXPECT_EQ(lenient->iter(), 10);
}

TYPED_TEST(SolverTest, WeightsFieldInitialisesTheNets) {
  auto trained = MakeSolver<TypeParam>(LeastSquaresSolver(""));
  trained->Step(3);
  NetParameter weights;
  trained->net()->ToProto(&weights);
  const std::string file = this->dir_.path() + "/trained.caffemodel";
  WriteProtoToBinaryFile(weights, file);
  SolverParameter param = LeastSquaresSolver("random_seed: 77 test_iter: 1");
  param.add_weights(file);
  auto tuned = MakeSolver<TypeParam>(param);
  EXPECT_EQ(Weights(*tuned), Weights(*trained));
  EXPECT_EQ(tuned->test_nets()[0]->layer_by_name("ip2")->blobs()[0]->cpu_data()[0],
            trained->net()->layer_by_name("ip2")->blobs()[0]->cpu_data()[0]);
}

TYPED_TEST(SolverTest, DisplayLogsInCaffesForm) {
  // Captured through a glog sink: the lines Caffe's log parsers look for.
  struct Sink : google::LogSink {
    std::vector<std::string> lines;
    void send(google::LogSeverity, const char*, const char*, int, const google::LogMessageTime&,
              const char* message, size_t length) override {
      lines.emplace_back(message, length);
    }
  } sink;
  google::AddLogSink(&sink);
  const int old_level = FLAGS_minloglevel;
  FLAGS_minloglevel = google::INFO;
  SolverParameter param =
      LeastSquaresSolver("display: 2 max_iter: 4 test_iter: 1 test_interval: 2 snapshot_prefix: '" +
                         this->dir_.path() + "/log' snapshot_after_train: true");
  auto solver = MakeSolver<TypeParam>(param);
  FillIterationData(*solver->test_nets()[0], 0);
  solver->Solve();
  FLAGS_minloglevel = old_level;
  google::RemoveLogSink(&sink);
  auto has = [&](const std::string& prefix) {
    for (const auto& line : sink.lines) {
      if (line.rfind(prefix, 0) == 0) return true;
    }
    return false;
  };
  EXPECT_TRUE(has("Iteration 0, loss = "));
  EXPECT_TRUE(has("Iteration 2, loss = "));
  EXPECT_TRUE(has("Iteration 4, loss = "));  // after the last update, in Solve
  EXPECT_TRUE(has("Iteration 2, lr = 0.05"));
  EXPECT_TRUE(has("    Train net output #0: loss = "));
  EXPECT_TRUE(has("Iteration 2, Testing net (#0)"));
  EXPECT_TRUE(has("    Test net output #0: loss = "));
  EXPECT_TRUE(
      has("Snapshotting to binary proto file " + this->dir_.path() + "/log_iter_4.caffemodel"));
  EXPECT_TRUE(has("Snapshotting solver state to binary proto file "));
  EXPECT_TRUE(has("Optimization Done."));
  bool rate_line = false;
  for (const auto& line : sink.lines) {
    rate_line =
        rate_line ||
        (line.rfind("Iteration 2 (", 0) == 0 && line.find("iter/s") != std::string::npos &&
         line.find("images/s") != std::string::npos && line.find("ETA 0:00:") != std::string::npos);
  }
  EXPECT_TRUE(rate_line);
  // The loss line carries the weighted loss like Caffe's.
  bool weighted = false;
  for (const auto& line : sink.lines) {
    weighted = weighted || (line.find("Train net output #0: loss = ") != std::string::npos &&
                            line.find("(* 1 = ") != std::string::npos);
  }
  EXPECT_TRUE(weighted);
}

}  // namespace
}  // namespace doppio

namespace doppio {
namespace {

// The solver files shipped under models/ name known solver types and lr policies.
TEST(ShippedSolversTest, EverySolverFileIsValid) {
  int checked = 0;
  for (const auto& entry : std::filesystem::directory_iterator(SourceDir() + "/models")) {
    const auto file = entry.path() / "solver.prototxt";
    if (!std::filesystem::exists(file)) continue;
    SCOPED_TRACE(file.string());
    SolverParameter param = ReadSolverParamsFromTextFile(file.string());
    UpgradeSolverType(&param);
    const auto types = SolverRegistry<float>::Types();
    EXPECT_NE(std::find(types.begin(), types.end(), param.type()), types.end());
    EXPECT_NO_THROW(CheckLearningRatePolicy(param));
    EXPECT_TRUE(param.has_net());
    EXPECT_TRUE(std::filesystem::exists(std::string(SourceDir() + "/") + param.net()));
    ++checked;
  }
  EXPECT_GE(checked, 5);
}

}  // namespace
}  // namespace doppio
