// `doppio train`, `doppio test` and `doppio device_query` run as the user runs them: the
// built binary in a child process. Covers logs, snapshots, resuming, fine-tuning, signals
// and every bad input of the training command.
#include <gtest/gtest.h>

#include <google/protobuf/text_format.h>

#include <regex>

#include "../data/data_test_helpers.hpp"
#include "cli_test_util.hpp"
#include "doppio/core/common.hpp"
#ifdef DOPPIO_WITH_ONEDNN
#include "doppio/device/onednn.hpp"
#endif
#include "doppio/util/io.hpp"
#include "slurm_job.hpp"
#include "test_util.hpp"

namespace doppio {
namespace {

using namespace cli_test;
namespace fs = std::filesystem;

const char* kNet = R"(
name: "cli"
layer { name: "data" type: "DummyData" top: "x" top: "y"
        dummy_data_param { shape { dim: 8 dim: 3 } shape { dim: 8 dim: 1 }
                           data_filler { type: "gaussian" std: 1 } } }
layer { name: "ip1" type: "InnerProduct" bottom: "x" top: "h"
        inner_product_param { num_output: 6 weight_filler { type: "gaussian" std: 0.5 } } }
layer { name: "relu" type: "ReLU" bottom: "h" top: "h" }
layer { name: "ip2" type: "InnerProduct" bottom: "h" top: "out"
        inner_product_param { num_output: 1 weight_filler { type: "gaussian" std: 0.5 } } }
layer { name: "loss" type: "EuclideanLoss" bottom: "out" bottom: "y" top: "loss" }
)";

class TrainCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(fs::exists(DoppioBinary()))
        << DoppioBinary() << " is missing: build the doppio_cli target first";
    fs::create_directory(Path("snap"));
    WriteText(Path("net.prototxt"), kNet);
  }
  std::string Path(const std::string& name) const { return dir_.path() + "/" + name; }
  // A solver file; the fields in `extra` override the defaults.
  std::string Solver(const std::string& extra = "", const std::string& name = "solver.prototxt",
                     bool with_prefix = true) {
    SolverParameter param = ParseText<SolverParameter>(
        "base_lr: 0.01 momentum: 0.9 max_iter: 20 display: 5 random_seed: 1 solver_mode: CPU "
        "lr_policy: 'fixed'");
    param.set_net(Path("net.prototxt"));
    if (with_prefix) param.set_snapshot_prefix(Path("snap/cli"));
    param.MergeFrom(ParseText<SolverParameter>(extra));
    std::string text;
    google::protobuf::TextFormat::PrintToString(param, &text);
    WriteText(Path(name), text);
    return Path(name);
  }
  Result Train(const std::vector<std::string>& flags,
               const std::map<std::string, std::string>& env = {},
               const std::string& binary = DoppioBinary()) {
    std::vector<std::string> args = {"train"};
    args.insert(args.end(), flags.begin(), flags.end());
    return RunDoppio(args, Path("log.txt"), env, binary);
  }
  bool Exists(const std::string& name) const { return fs::exists(Path(name)); }
  std::vector<std::string> SnapshotFiles() const {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(Path("snap"))) {
      names.push_back(entry.path().filename().string());
    }
    std::sort(names.begin(), names.end());
    return names;
  }
  TempDir dir_;
};

TEST_F(TrainCommandTest, TrainsSnapshotsAndLogsInCaffesForm) {
  const auto result = Train({"--solver=" + Solver("snapshot: 10 test_iter: 2 test_interval: 10")});
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_EQ(SnapshotFiles(),
            (std::vector<std::string>{"cli_iter_10.caffemodel", "cli_iter_10.solverstate",
                                      "cli_iter_20.caffemodel", "cli_iter_20.solverstate"}));
  const std::string& log = result.output;
  EXPECT_CONTAINS(log, "Iteration 10, Testing net (#0)");
  EXPECT_CONTAINS(log, "    Test net output #0: loss = ");
  EXPECT_CONTAINS(log, "Snapshotting to binary proto file " + Path("snap/cli_iter_10.caffemodel"));
  EXPECT_CONTAINS(log, "Optimization Done.");
  // The expressions of Caffe's tools/extra/parse_log.py find what they look for.
  const std::regex loss_line(R"(Iteration (\d+), loss = ([\.\deE+-]+))");
  const std::regex lr_line(R"(Iteration (\d+), lr = ([-+]?[0-9]*\.?[0-9]+([eE]?[-+]?[0-9]+)?))");
  const std::regex train_output(R"(Train net output #(\d+): (\S+) = ([\.\deE+-]+))");
  const std::regex test_output(R"(Test net output #(\d+): (\S+) = ([\.\deE+-]+))");
  const std::regex rate_line(
      R"(Iteration (\d+) \(([\d.]+) iter/s, ([\d.]+) images/s, ETA \d+:\d\d:\d\d\))");
  std::vector<int> loss_iterations;
  for (std::sregex_iterator it(log.begin(), log.end(), loss_line), end; it != end; ++it) {
    loss_iterations.push_back(std::stoi((*it)[1]));
  }
  EXPECT_EQ(loss_iterations, (std::vector<int>{0, 5, 10, 15, 20}));
  EXPECT_TRUE(std::regex_search(log, lr_line));
  EXPECT_TRUE(std::regex_search(log, train_output));
  EXPECT_TRUE(std::regex_search(log, test_output));
  std::smatch rate;
  ASSERT_TRUE(std::regex_search(log, rate, rate_line)) << log;
  // images/s = iter/s x batch (8).
  EXPECT_NEAR(std::stod(rate[3]), 8 * std::stod(rate[2]), 0.1 + 0.01 * std::stod(rate[3]));
  // Caffe's parse_log.sh takes the 9th whitespace-separated field of ", loss = " lines.
  const std::regex any_loss_line(R"([^\n]*, loss = [^\n]*)");
  for (std::sregex_iterator it(log.begin(), log.end(), any_loss_line), end; it != end; ++it) {
    std::istringstream fields(it->str());
    std::string field;
    for (int i = 0; i < 9; ++i) fields >> field;
    EXPECT_NO_THROW(std::stod(field)) << it->str();
  }
  // Once training is done, the peak next to what the train and test nets need.
  const std::regex memory_line(
      R"(Peak host memory: [\d.]+ MiB; the net needs [\d.]+ MiB \(parameters [\d.]+ MiB, )"
      R"(activations [\d.]+ MiB, workspace [\d.]+ MiB\), (overhead|of which) [\d.]+ MiB)");
  std::smatch memory;
  ASSERT_TRUE(std::regex_search(log, memory, memory_line)) << log;
  EXPECT_GT(static_cast<std::size_t>(memory.position(0)), log.find("Optimization Done."));
}

TEST_F(TrainCommandTest, LayerWiseReduceFalseMeansBlockingSync) {
  const std::string solver = Solver("layer_wise_reduce: false max_iter: 2");
  const auto blocking = Train({"--solver=" + solver});
  ASSERT_EQ(blocking.exit_code, 0) << blocking.output;
  EXPECT_CONTAINS(blocking.output,
                  "layer_wise_reduce: false, gradients are reduced after backward "
                  "(--sync=blocking)");
  const auto overlap = Train({"--solver=" + solver, "--sync=overlap"});
  EXPECT_EQ(overlap.exit_code, 1) << overlap.output;
  EXPECT_CONTAINS(overlap.output,
                  "--sync=overlap contradicts layer_wise_reduce: false in " + solver);
}

TEST_F(TrainCommandTest, PrecisionComesFromTheSolverAndTheFlagWins) {
  // The InnerProduct layers are ONEDNN's by default: in bf16 where the CPU has AVX512-BF16.
  const std::string solver = Solver("precision: BF16 max_iter: 4 display: 2");
  const auto bf16 = Train({"--solver=" + solver});
#ifdef DOPPIO_WITH_ONEDNN
  if (OnednnBf16Missing().empty()) {
    ASSERT_EQ(bf16.exit_code, 0) << bf16.output;
    EXPECT_CONTAINS(bf16.output, "precision bf16 (docs/precision.md)");
    EXPECT_CONTAINS(bf16.output, "Optimization Done.");
  } else {
    EXPECT_EQ(bf16.exit_code, 1) << bf16.output;
    EXPECT_CONTAINS(bf16.output, solver + ": precision bf16 on the CPU needs AVX512-BF16");
  }
#endif
  const auto fp32 = Train({"--solver=" + solver, "--precision=fp32"});
  ASSERT_EQ(fp32.exit_code, 0) << fp32.output;
  EXPECT_CONTAINS(fp32.output, "precision fp32 (docs/precision.md)");
  const auto fp16 = Train({"--solver=" + solver, "--precision=fp16"});
  EXPECT_EQ(fp16.exit_code, 1) << fp16.output;
  EXPECT_CONTAINS(fp16.output, "--precision=fp16: precision fp16 on the CPU");
}

TEST_F(TrainCommandTest, SolverDebugInfoLogsLayersOnDisplayIterations) {
  const auto result = Train({"--solver=" + Solver("debug_info: true max_iter: 4 display: 2")});
  ASSERT_EQ(result.exit_code, 0) << result.output;
  const auto count = [&result](const std::string& line) {
    int n = 0;
    for (auto at = result.output.find(line); at != std::string::npos;
         at = result.output.find(line, at + 1)) {
      ++n;
    }
    return n;
  };
  // Iterations 0 and 2 of 0..3 are displayed.
  EXPECT_EQ(count("    [Forward] Layer ip1, top blob h data: "), 2) << result.output;
  EXPECT_EQ(count("    [Forward] Layer ip1, param blob 0 data: "), 2);
  EXPECT_EQ(count("    [Backward] Layer ip2, bottom blob h diff: "), 2);
  EXPECT_EQ(count("    [Backward] Layer ip2, param blob 1 diff: "), 2);
  EXPECT_EQ(count("    [Update] Layer ip1, param 0 data: "), 2);
  // The data layer has no bottom to propagate to.
  EXPECT_EQ(count("[Backward] Layer data"), 0);
}

TEST_F(TrainCommandTest, ResumesFromASnapshot) {
  const std::string solver = Solver("snapshot: 10");
  ASSERT_EQ(Train({"--solver=" + solver}).exit_code, 0);
  const std::string final_weights = ReadText(Path("snap/cli_iter_20.caffemodel"));
  fs::remove(Path("snap/cli_iter_20.caffemodel"));
  fs::remove(Path("snap/cli_iter_20.solverstate"));
  const auto result =
      Train({"--solver=" + solver, "--snapshot=" + Path("snap/cli_iter_10.solverstate")});
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_CONTAINS(result.output, "Resuming from " + Path("snap/cli_iter_10.solverstate"));
  EXPECT_EQ(result.output.find("Iteration 5, loss"), std::string::npos);
  EXPECT_CONTAINS(result.output, "Iteration 15, loss");
  // DummyData draws differ after a resume, so only the files are compared for existence.
  EXPECT_TRUE(Exists("snap/cli_iter_20.caffemodel"));
  EXPECT_FALSE(final_weights.empty());
}

// --resume=auto, as a job that requeues itself runs it: the newest complete snapshot, every
// start recorded, and the same start again and again reported as a requeue loop.
TEST_F(TrainCommandTest, ResumeAutoTakesTheNewestCompleteSnapshot) {
  const std::string solver = Solver("snapshot: 10");
  const auto first = Train({"--solver=" + solver, "--resume=auto"});
  ASSERT_EQ(first.exit_code, 0) << first.output;
  EXPECT_CONTAINS(first.output, "--resume=auto: no snapshot under snapshot_prefix '" +
                                    Path("snap/cli") + "' yet: training starts from iteration 0");
  EXPECT_CONTAINS(first.output, "Iteration 5, loss");
  // The run was interrupted after iteration 10's snapshot, and a newer one is half written.
  fs::remove(Path("snap/cli_iter_20.caffemodel"));
  fs::remove(Path("snap/cli_iter_20.solverstate"));
  WriteText(Path("snap/cli_iter_30.solverstate"), "\x08");
  const auto second = Train({"--solver=" + solver, "--resume=auto"});
  ASSERT_EQ(second.exit_code, 0) << second.output;
  EXPECT_CONTAINS(second.output,
                  "passing over an incomplete snapshot: " + Path("snap/cli_iter_30.solverstate"));
  EXPECT_CONTAINS(second.output, "is " + Path("snap/cli_iter_10.solverstate") + " (iteration 10)");
  EXPECT_CONTAINS(second.output, "Resuming from " + Path("snap/cli_iter_10.solverstate"));
  EXPECT_EQ(second.output.find("Iteration 5, loss"), std::string::npos);
  EXPECT_CONTAINS(second.output, "Iteration 15, loss");
  EXPECT_TRUE(Exists("snap/cli_iter_20.caffemodel"));
  EXPECT_EQ(second.output.find("Requeue loop"), std::string::npos);
  // Three starts from iteration 20 (done, nothing to train) are not yet a loop; the fourth is.
  for (int start = 1; start <= 3; ++start) {
    SCOPED_TRACE(start);
    const auto again = Train({"--solver=" + solver, "--resume=auto"});
    ASSERT_EQ(again.exit_code, 0) << again.output;
    EXPECT_EQ(again.output.find("Requeue loop"), std::string::npos) << again.output;
  }
  const std::string history = ReadText(Path("snap/cli_resumes.txt"));
  EXPECT_EQ(std::count(history.begin(), history.end(), '\n'), 5) << history;
  EXPECT_EQ(history.rfind("0 process ", 0), 0u) << history;
  const auto loop = Train({"--solver=" + solver, "--resume=auto"});
  EXPECT_CONTAINS(loop.output, "Requeue loop: this is start 4 in a row from iteration 20 (" +
                                   Path("snap/cli_resumes.txt") + "): the 3 runs before it ended");
}

// What a Slurm job's tasks see: the job in the log, and with --snapshot_prefix_from_job a
// snapshot prefix of its own, found again after a requeue.
TEST_F(TrainCommandTest, ASlurmJobIsLoggedAndNamesItsSnapshots) {
  const std::map<std::string, std::string> slurm = {{"SLURM_JOB_ID", "77"},
                                                    {"SLURM_JOB_NAME", "lenet"},
                                                    {"SLURM_RESTART_COUNT", "2"},
                                                    {"SLURM_JOB_NUM_NODES", "1"},
                                                    {"SLURM_JOB_NODELIST", "node7"}};
  const std::string solver = Solver("snapshot: 10");
  const auto result = Train({"--solver=" + solver, "--snapshot_prefix_from_job"}, slurm);
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_CONTAINS(result.output, "Slurm job 77 'lenet' (restart 2), 1 node: node7");
  EXPECT_CONTAINS(result.output, "snapshot_prefix of Slurm job 77");
  EXPECT_TRUE(Exists("snap/cli_job77_iter_20.caffemodel"));
  EXPECT_FALSE(Exists("snap/cli_iter_20.caffemodel"));
  fs::remove(Path("snap/cli_job77_iter_20.solverstate"));
  const auto requeued =
      Train({"--solver=" + solver, "--snapshot_prefix_from_job", "--resume=auto"}, slurm);
  ASSERT_EQ(requeued.exit_code, 0) << requeued.output;
  EXPECT_CONTAINS(requeued.output, "Resuming from " + Path("snap/cli_job77_iter_10.solverstate"));
  // A task of a job array, and outside Slurm.
  const auto array =
      Train({"--solver=" + solver, "--snapshot_prefix_from_job", "--iterations=1"},
            {{"SLURM_JOB_ID", "80"}, {"SLURM_ARRAY_JOB_ID", "78"}, {"SLURM_ARRAY_TASK_ID", "3"}});
  ASSERT_EQ(array.exit_code, 0) << array.output;
  EXPECT_CONTAINS(array.output, "Slurm job 78_3 (first run)");
  EXPECT_TRUE(Exists("snap/cli_job78_3_iter_1.caffemodel"));
  const auto outside = Train({"--solver=" + solver, "--snapshot_prefix_from_job"});
  EXPECT_EQ(outside.exit_code, 1) << outside.output;
  EXPECT_CONTAINS(outside.output, "--snapshot_prefix_from_job needs a Slurm job");
}

// snapshot_format: HDF5 as in Caffe: .caffemodel.h5 and .solverstate.h5, resumed from with
// --snapshot, and the weights scored with --weights.
TEST_F(TrainCommandTest, Hdf5SnapshotsResumeAndServeAsWeights) {
  const std::string solver = Solver("snapshot: 10 snapshot_format: HDF5");
  const auto trained = Train({"--solver=" + solver});
  ASSERT_EQ(trained.exit_code, 0) << trained.output;
  EXPECT_CONTAINS(trained.output,
                  "Snapshotting to HDF5 file " + Path("snap/cli_iter_10.caffemodel.h5"));
  EXPECT_EQ(SnapshotFiles(),
            (std::vector<std::string>{"cli_iter_10.caffemodel.h5", "cli_iter_10.solverstate.h5",
                                      "cli_iter_20.caffemodel.h5", "cli_iter_20.solverstate.h5"}));
  fs::remove(Path("snap/cli_iter_20.caffemodel.h5"));
  const auto resumed =
      Train({"--solver=" + solver, "--snapshot=" + Path("snap/cli_iter_10.solverstate.h5")});
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_CONTAINS(resumed.output, "Restored solver state at iteration 10");
  EXPECT_EQ(resumed.output.find("Iteration 5, loss"), std::string::npos);
  EXPECT_TRUE(Exists("snap/cli_iter_20.caffemodel.h5"));

  const std::string weights = Path("snap/cli_iter_20.caffemodel.h5");
  const auto tested = RunDoppio(
      {"test", "--model=" + Path("net.prototxt"), "--weights=" + weights, "--iterations=2"},
      Path("test_log.txt"));
  ASSERT_EQ(tested.exit_code, 0) << tested.output;
  EXPECT_CONTAINS(tested.output, "Copied weights of 2 of 2 layers");

  const auto missing =
      Train({"--solver=" + solver, "--snapshot=" + Path("snap/none.solverstate.h5")});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_CONTAINS(missing.output, "none.solverstate.h5");
}

TEST_F(TrainCommandTest, FineTunesFromWeightsAndOverridesIterations) {
  const std::string solver = Solver();
  ASSERT_EQ(Train({"--solver=" + solver}).exit_code, 0);
  const std::string weights = Path("snap/cli_iter_20.caffemodel");
  fs::rename(weights, Path("trained.caffemodel"));
  const auto result =
      Train({"--solver=" + solver, "--weights=" + Path("trained.caffemodel"), "--iterations=3"});
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_CONTAINS(result.output, "Copied weights of 2 of 2 layers");
  EXPECT_TRUE(Exists("snap/cli_iter_3.caffemodel"));
  EXPECT_FALSE(Exists("snap/cli_iter_20.caffemodel"));
}

TEST_F(TrainCommandTest, SnapshotPrefixDefaultsToTheSolverFile) {
  const auto result = Train({"--solver=" + Solver("max_iter: 2", "my_solver.prototxt", false)});
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_TRUE(Exists("my_solver_iter_2.caffemodel"));
  EXPECT_TRUE(Exists("my_solver_iter_2.solverstate"));
}

// A long run that only signals end.
std::string LongRun() { return "max_iter: 100000000\ndisplay: 0\nsnapshot_after_train: false"; }

TEST_F(TrainCommandTest, SigintWithSnapshotEffectWritesASnapshotAndGoesOn) {
  Child child({"train", "--solver=" + Solver(LongRun()), "--sigint_effect=snapshot",
               "--sighup_effect=stop"},
              Path("log.txt"));
  ASSERT_TRUE(child.WaitUntil([&] {
    return child.Log().find("Starting Optimization") != std::string::npos;
  })) << child.Log();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  child.Signal(SIGINT);
  ASSERT_TRUE(child.WaitUntil([&] {
    for (const auto& name : SnapshotFiles()) {
      if (name.find(".solverstate") != std::string::npos) return true;
    }
    return false;
  })) << child.Log();
  // Still training after the snapshot; SIGHUP (effect stop) ends it.
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  child.Signal(SIGHUP);
  // Stopped before max_iter: the interrupted exit code.
  EXPECT_EQ(child.Wait(), 5) << child.Log();
  const std::string log = child.Log();
  EXPECT_CONTAINS(log, "Snapshotting solver state to binary proto file");
  EXPECT_CONTAINS(log, "Optimization stopped early.");
  const auto files = SnapshotFiles();
  ASSERT_EQ(files.size(), 2u);
  // The snapshot is a real one: it restores.
  SolverState state;
  ReadProtoFromBinaryFile(Path("snap/" + files[1]), &state);
  EXPECT_GT(state.iter(), 0);
  EXPECT_EQ(files[0], "cli_iter_" + std::to_string(state.iter()) + ".caffemodel");
  const auto resumed = Train({"--solver=" + Solver("max_iter: " + std::to_string(state.iter() + 2)),
                              "--snapshot=" + Path("snap/" + files[1])});
  EXPECT_EQ(resumed.exit_code, 0) << resumed.output;
}

TEST_F(TrainCommandTest, SigintAndSigtermStopWithASnapshotByDefault) {
  for (int signal_number : {SIGINT, SIGTERM}) {
    SCOPED_TRACE(signal_number == SIGINT ? "SIGINT" : "SIGTERM");
    for (const auto& name : SnapshotFiles()) fs::remove(Path("snap/" + name));
    Child child(
        {"train",
         "--solver=" + Solver("max_iter: 100000000\ndisplay: 0\nsnapshot_after_train: true")},
        // A fresh log per signal: the previous run's log would satisfy the wait below before
        // this child has even started.
        Path(std::string("log_") + std::to_string(signal_number) + ".txt"));
    ASSERT_TRUE(child.WaitUntil([&] {
      return child.Log().find("Starting Optimization") != std::string::npos;
    })) << child.Log();
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    child.Signal(signal_number);
    EXPECT_EQ(child.Wait(), 5) << child.Log();
    EXPECT_CONTAINS(child.Log(), "Optimization stopped early.");
    EXPECT_EQ(SnapshotFiles().size(), 2u);
  }
}

// SIGTERM lands while the prefetch threads have read batches ahead; the snapshot still
// resumes at the first batch the net had not seen, and the resumed run ends with the bytes
// of the uninterrupted one (random crops, mirrors and Dropout on).
TEST_F(TrainCommandTest, SigtermMidPrefetchResumesExactly) {
  std::vector<Datum> records;
  for (int i = 0; i < 10; ++i) {
    records.push_back(testing_data::MakeDatum(
        1, 6, 6, i % 3, [i](int, int h, int w) { return (31 * i + 7 * h + 3 * w) % 256; }));
  }
  testing_data::WriteDatumLmdb(Path("lmdb"), records);
  WriteText(Path("data_net.prototxt"),
            "name: 'resume' "
            "layer { name: 'data' type: 'Data' top: 'x' top: 'y' "
            "  transform_param { crop_size: 4 mirror: true scale: 0.004 } "
            "  data_param { source: '" +
                Path("lmdb") +
                "' batch_size: 4 prefetch: 4 threads: 2 } } "
                "layer { name: 'ip1' type: 'InnerProduct' bottom: 'x' top: 'h' "
                "  inner_product_param { num_output: 6 weight_filler { type: 'gaussian' std: 0.5 "
                "} } } "
                "layer { name: 'drop' type: 'Dropout' bottom: 'h' top: 'h' } "
                "layer { name: 'ip2' type: 'InnerProduct' bottom: 'h' top: 'out' "
                "  inner_product_param { num_output: 3 weight_filler { type: 'gaussian' std: 0.5 "
                "} } } "
                "layer { name: 'loss' type: 'SoftmaxWithLoss' bottom: 'out' bottom: 'y' } ");
  const std::string net = "net: '" + Path("data_net.prototxt") + "' display: 0 ";
  Child child({"train", "--solver=" + Solver(net + "max_iter: 100000000", "long.prototxt")},
              Path("long_log.txt"));
  ASSERT_TRUE(child.WaitUntil([&] {
    return child.Log().find("Starting Optimization") != std::string::npos;
  })) << child.Log();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  child.Signal(SIGTERM);
  ASSERT_EQ(child.Wait(), 5) << child.Log();
  std::string state_file;
  for (const auto& name : SnapshotFiles()) {
    if (name.find(".solverstate") != std::string::npos) state_file = Path("snap/" + name);
  }
  ASSERT_FALSE(state_file.empty()) << child.Log();
  SolverState state;
  ReadProtoFromBinaryFile(state_file, &state);
  ASSERT_EQ(state.data_position_size(), 1);
  EXPECT_EQ(state.data_position(0).position(), 4u * state.iter());

  const std::string end = std::to_string(state.iter() + 5);
  const std::string weights = Path("snap/cli_iter_" + end + ".caffemodel");
  const auto resumed = Train(
      {"--solver=" + Solver(net + "max_iter: " + end, "end.prototxt"), "--snapshot=" + state_file});
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_CONTAINS(resumed.output, "resumes its data at record stream position");
  const std::string resumed_bytes = ReadText(weights);
  fs::remove(weights);
  const auto straight = Train({"--solver=" + Solver(net + "max_iter: " + end, "end.prototxt")});
  ASSERT_EQ(straight.exit_code, 0) << straight.output;
  EXPECT_TRUE(ReadText(weights) == resumed_bytes) << "the resumed run's weights differ";
}

TEST_F(TrainCommandTest, SigintWithEffectNoneIsIgnored) {
  Child child({"train", "--solver=" + Solver("max_iter: 3000\ndisplay: 0"), "--sigint_effect=none"},
              Path("log.txt"));
  ASSERT_TRUE(child.WaitUntil(
      [&] { return child.Log().find("Starting Optimization") != std::string::npos; }));
  child.Signal(SIGINT);
  EXPECT_EQ(child.Wait(), 0) << child.Log();
  EXPECT_CONTAINS(child.Log(), "Optimization Done.");
  EXPECT_TRUE(Exists("snap/cli_iter_3000.caffemodel"));
}

// Every bad input: a non-zero exit and a message naming the problem.
struct BadCase {
  std::string name;
  std::vector<std::string> flags;
  std::vector<std::string> message;
};

TEST_F(TrainCommandTest, BadInputsFailWithAClearMessage) {
  WriteText(Path("no_net.prototxt"), "base_lr: 0.1\nlr_policy: \"fixed\"\n");
  WriteText(Path("missing_net.prototxt"),
            "net: \"" + Path("absent_net.prototxt") + "\"\nbase_lr: 0.1\nlr_policy: \"fixed\"\n");
  WriteText(Path("text.caffemodel"), kNet);
  WriteText(
      Path("other_net.prototxt"),
      std::string(kNet).replace(std::string(kNet).find("num_output: 6"), 13, "num_output: 9"));
  WriteText(Path("other_solver.prototxt"),
            "net: \"" + Path("other_net.prototxt") +
                "\"\nbase_lr: 0.1\nlr_policy: \"fixed\"\nmax_iter: 1\nsnapshot_prefix: \"" +
                Path("other") + "\"\n");
  ASSERT_EQ(Train({"--solver=" + Path("other_solver.prototxt")}).exit_code, 0);
  const std::vector<BadCase> cases = {
      {"no --solver", {}, {"--solver is required"}},
      {"missing solver file", {"--solver=" + Path("absent.prototxt")}, {"absent.prototxt"}},
      {"missing net file",
       {"--solver=" + Path("missing_net.prototxt")},
       {"absent_net.prototxt", "net"}},
      {"neither net nor train_net", {"--solver=" + Path("no_net.prototxt")}, {"no training net"}},
      {"unknown solver type",
       {"--solver=" + Solver("type: \"Sideways\"", "s1.prototxt")},
       {"unknown solver type 'Sideways'"}},
      {"unknown lr policy",
       {"--solver=" + Solver("lr_policy: \"zigzag\"", "s2.prototxt")},
       {"unknown lr_policy 'zigzag'"}},
      {"weights not a NetParameter",
       {"--solver=" + Solver(), "--weights=" + Path("text.caffemodel")},
       {"text.caffemodel"}},
      {"missing weights",
       {"--solver=" + Solver(), "--weights=" + Path("nope.caffemodel")},
       {"nope.caffemodel"}},
      {"snapshot of a different net",
       {"--solver=" + Solver(), "--snapshot=" + Path("other_iter_1.solverstate")},
       {"different net", "ip1"}},
      {"weights and snapshot",
       {"--solver=" + Solver(), "--weights=a", "--snapshot=b"},
       {"not both"}},
      {"resume and snapshot",
       {"--solver=" + Solver(), "--resume=auto", "--snapshot=b"},
       {"give --resume=auto or --snapshot=b, not both"}},
      {"unknown resume", {"--solver=" + Solver(), "--resume=newest"}, {"--resume='newest'"}},
      {"another net's snapshots under the prefix",
       {"--solver=" + Solver("snapshot_prefix: \"" + Path("other") + "\"", "s4.prototxt", false),
        "--resume=auto"},
       {"other_iter_1.caffemodel", "is from a different net than 'cli', of the same name", "ip1"}},
      {"bad signal effect", {"--solver=" + Solver(), "--sigint_effect=explode"}, {"explode"}},
      {"unwritable snapshot directory",
       {"--solver=" + Solver("snapshot_prefix: \"/proc/doppio/cli\"", "s3.prototxt", false)},
       {"cannot write snapshots", "'/proc/doppio'"}},
  };
  for (const auto& bad : cases) {
    SCOPED_TRACE(bad.name);
    const auto result = Train(bad.flags);
    EXPECT_NE(result.exit_code, 0) << result.output;
    for (const auto& part : bad.message) EXPECT_CONTAINS(result.output, part);
    // Refused before any training.
    EXPECT_EQ(result.output.find("Iteration 0"), std::string::npos) << result.output;
    EXPECT_EQ(result.output.find("Check failed"), std::string::npos) << result.output;
  }
}

TEST_F(TrainCommandTest, DiskFailureKeepsThePreviousSnapshot) {
  const std::string solver = Solver("snapshot: 10");
  // The shipped tool reads no fault variable.
  const auto shipped = Train({"--solver=" + solver}, {{"DOPPIO_FAULT_WRITE", "cli_iter_20."}});
  EXPECT_EQ(shipped.exit_code, 0) << shipped.output;
  EXPECT_TRUE(Exists("snap/cli_iter_20.caffemodel"));
  fs::remove_all(Path("snap"));
  fs::create_directories(Path("snap"));
  const auto result =
      Train({"--solver=" + solver}, {{"DOPPIO_FAULT_WRITE", "cli_iter_20."}}, DoppioFaultsBinary());
  EXPECT_EQ(result.exit_code, 1) << result.output;
  EXPECT_CONTAINS(result.output, "cli_iter_20.caffemodel");
  EXPECT_CONTAINS(result.output, "write failed");
  EXPECT_EQ(SnapshotFiles(),
            (std::vector<std::string>{"cli_iter_10.caffemodel", "cli_iter_10.solverstate"}));
  // The surviving snapshot resumes.
  const auto resumed =
      Train({"--solver=" + solver, "--snapshot=" + Path("snap/cli_iter_10.solverstate")});
  EXPECT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_TRUE(Exists("snap/cli_iter_20.solverstate"));
}

TEST_F(TrainCommandTest, DivergenceExitsWithCode3NamingTheIterationAndNoSnapshotOfIt) {
  const std::string solver = Solver("base_lr: 1e30\nmomentum: 0\nsnapshot: 1", "nan.prototxt");
  const auto result = Train({"--solver=" + solver});
  EXPECT_EQ(result.exit_code, 3) << result.output;
  std::smatch match;
  ASSERT_TRUE(std::regex_search(
      result.output, match,
      std::regex(R"(Iteration (\d+) \(lr = 1e\+30\): training diverged: .*the first NaN or )"
                 R"(infinity is in .* of layer '[a-z0-9]+' \([A-Za-z]+\))")))
      << result.output;
  // The snapshot after the last good update is the newest.
  const std::string last_good = "cli_iter_" + match[1].str() + ".caffemodel";
  const auto files = SnapshotFiles();
  EXPECT_NE(std::find(files.begin(), files.end(), last_good), files.end()) << last_good;
  EXPECT_EQ(std::find(files.begin(), files.end(),
                      "cli_iter_" + std::to_string(std::stoi(match[1].str()) + 1) + ".caffemodel"),
            files.end());

  // --allow_nonfinite goes on to max_iter and writes the snapshots.
  const auto lenient = Train({"--solver=" + solver, "--allow_nonfinite", "--iterations=8"});
  EXPECT_EQ(lenient.exit_code, 0) << lenient.output;
  EXPECT_TRUE(Exists("snap/cli_iter_8.caffemodel"));
  EXPECT_CONTAINS(lenient.output, "going on (--allow_nonfinite)");
}

TEST_F(TrainCommandTest, TestCommandPrintsAveragedOutputs) {
  ASSERT_EQ(Train({"--solver=" + Solver()}).exit_code, 0);
  const auto result =
      RunDoppio({"test", "--model=" + Path("net.prototxt"),
                 "--weights=" + Path("snap/cli_iter_20.caffemodel"), "--iterations=3"},
                Path("test_log.txt"));
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_CONTAINS(result.output, "Running for 3 iterations.");
  EXPECT_CONTAINS(result.output, "Batch 2, loss = ");
  EXPECT_CONTAINS(result.output, "Loss: ");
  // The mean of the three batches.
  std::vector<double> batches;
  const std::string& log = result.output;
  const std::regex batch_line(R"(Batch \d, loss = ([\d.eE+-]+))");
  for (std::sregex_iterator it(log.begin(), log.end(), batch_line), end; it != end; ++it) {
    batches.push_back(std::stod((*it)[1]));
  }
  ASSERT_EQ(batches.size(), 3u);
  std::smatch mean;
  ASSERT_TRUE(std::regex_search(log, mean, std::regex(R"(\] loss = ([\d.eE+-]+) \(\* 1 = )")))
      << log;
  EXPECT_NEAR(std::stod(mean[1]), (batches[0] + batches[1] + batches[2]) / 3,
              1e-4 * (1 + std::stod(mean[1])));
  // Bad input: no weights, weights of another net.
  const auto no_weights =
      RunDoppio({"test", "--model=" + Path("net.prototxt")}, Path("test_log.txt"));
  EXPECT_EQ(no_weights.exit_code, 1);
  EXPECT_CONTAINS(no_weights.output, "--weights is required");
  const auto no_model = RunDoppio({"test", "--weights=x"}, Path("test_log.txt"));
  EXPECT_EQ(no_model.exit_code, 1);
  EXPECT_CONTAINS(no_model.output, "--model is required");
}

TEST_F(TrainCommandTest, DeviceQueryAndHelp) {
  const auto query = RunDoppio({"device_query"}, Path("log.txt"));
  EXPECT_EQ(query.exit_code, 0) << query.output;
  EXPECT_CONTAINS(query.output, "CPU: ");
  const auto help = RunDoppio({"train", "--help"}, Path("log.txt"));
  EXPECT_EQ(help.exit_code, 0);
  for (const char* flag : {"--solver", "--snapshot", "--weights", "--sigint_effect",
                           "--sighup_effect", "--iterations"}) {
    EXPECT_CONTAINS(help.output, flag);
  }
  const auto usage = RunDoppio({"--help"}, Path("log.txt"));
  EXPECT_EQ(usage.exit_code, 0);
  for (const char* command : {"train", "test", "device_query", "help"}) {
    EXPECT_CONTAINS(usage.output, command);
  }
  // `doppio help [command]` prints what the --help forms print.
  EXPECT_EQ(RunDoppio({"help"}, Path("log.txt")).output, usage.output);
  const auto help_train = RunDoppio({"help", "train"}, Path("log.txt"));
  EXPECT_EQ(help_train.exit_code, 0);
  EXPECT_EQ(help_train.output, help.output);
  const auto unknown = RunDoppio({"help", "trian"}, Path("log.txt"));
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_CONTAINS(unknown.output, "unknown command 'trian'");
  EXPECT_EQ(RunDoppio({"help", "train", "test"}, Path("log.txt")).exit_code, 2);
}

// Every command gets one thread budget, logged with where it came from (docs/cpu.md).
TEST_F(TrainCommandTest, TheThreadBudgetSaysWhereItCameFrom) {
  const auto automatic = RunDoppio({"device_query"}, Path("log.txt"), {{"OMP_NUM_THREADS", ""}});
  EXPECT_EQ(automatic.exit_code, 0) << automatic.output;
  EXPECT_CONTAINS(automatic.output, "for 1 rank on this node)");
  const auto omp = RunDoppio({"device_query"}, Path("log.txt"), {{"OMP_NUM_THREADS", "1"}});
  EXPECT_CONTAINS(omp.output, "CPU threads: 1 (OMP_NUM_THREADS)");
  const auto flag =
      RunDoppio({"device_query", "--threads=1"}, Path("log.txt"), {{"OMP_NUM_THREADS", "3"}});
  EXPECT_CONTAINS(flag.output, "CPU threads: 1 (--threads)");
  const auto many = RunDoppio({"device_query", "--threads=4096"}, Path("log.txt"));
  EXPECT_EQ(many.exit_code, 0) << many.output;
  EXPECT_CONTAINS(many.output,
                  "4096 threads per rank (--threads) x 1 rank(s) on this node is "
                  "more than the ");
  const auto zero = RunDoppio({"train", "--solver=none.prototxt", "--threads=0"}, Path("log.txt"));
  EXPECT_EQ(zero.exit_code, 1) << zero.output;
  EXPECT_CONTAINS(zero.output, "--threads must be at least 1, not 0");
}

// srun sets SLURM_NTASKS_PER_NODE only for --ntasks-per-node; SLURM_TASKS_PER_NODE always.
TEST(SlurmJob, TasksOnNodeFromSlurmsCompressedList) {
  EXPECT_EQ(SlurmTasksOnNode("4", 0), 4);
  EXPECT_EQ(SlurmTasksOnNode("2(x3),1", 0), 2);
  EXPECT_EQ(SlurmTasksOnNode("2(x3),1", 2), 2);
  EXPECT_EQ(SlurmTasksOnNode("2(x3),1", 3), 1);
  EXPECT_EQ(SlurmTasksOnNode("2(x3),1", 4), 0);
  EXPECT_EQ(SlurmTasksOnNode("1,3(x2)", 2), 3);
  for (const char* bad : {"", "x", "2(x", "(x2)"}) EXPECT_EQ(SlurmTasksOnNode(bad, 0), 0) << bad;
  EXPECT_EQ(SlurmTasksOnNode("2,,1", 1), 0);
}

TEST_F(TrainCommandTest, SlurmsTasksOfTheNodeShareItsCores) {
  const auto result = RunDoppio({"device_query"}, Path("log.txt"),
                                {{"OMP_NUM_THREADS", ""},
                                 {"SLURM_LOCALID", "1"},
                                 {"SLURM_NODEID", "1"},
                                 {"SLURM_TASKS_PER_NODE", "1,2"}});
  EXPECT_EQ(result.exit_code, 0) << result.output;
  EXPECT_CONTAINS(result.output, "for 2 ranks on this node)");
}

// gflags' flags are global: a command refuses another command's instead of ignoring it.
TEST_F(TrainCommandTest, AnotherCommandsFlagIsAnErrorNamingTheCommandsThatTakeIt) {
  const auto shape =
      RunDoppio({"train", "--solver=none.prototxt", "--input_shape=3,8,8"}, Path("log.txt"));
  EXPECT_EQ(shape.exit_code, 2) << shape.output;
  EXPECT_CONTAINS(shape.output,
                  "doppio train: --input_shape is a flag of `doppio scale` and `doppio time`, not "
                  "of train (`doppio help train` lists its flags)");
  const auto blobs =
      RunDoppio({"test", "--model=m", "--weights=w", "--blobs=conv1"}, Path("log.txt"));
  EXPECT_EQ(blobs.exit_code, 2) << blobs.output;
  EXPECT_CONTAINS(blobs.output, "--blobs is a flag of `doppio extract_features`, not of test");
  // A command's own flags, the common ones and glog's pass on to the command itself, which
  // here stops at the missing solver file with its own error.
  const auto own =
      RunDoppio({"train", "--solver=none.prototxt", "--iterations=3", "--v=0"}, Path("log.txt"));
  EXPECT_EQ(own.exit_code, 1) << own.output;
  EXPECT_CONTAINS(own.output, "none.prototxt");
}

}  // namespace
}  // namespace doppio
