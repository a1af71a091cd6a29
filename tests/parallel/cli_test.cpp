// `mpiexec -np N doppio train` run as a user runs it, as a child process: the logs of a
// data-parallel run, the timeline, TCP against shared memory, resuming with another number
// of ranks, and failures: a rank that errs, crashes, exits or hangs ends the whole job
// promptly with a non-zero code and a message naming it; ranks that disagree are refused.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <regex>
#include <sstream>
#include <thread>

#include <google/protobuf/text_format.h>

#include "doppio/util/io.hpp"
#include "parallel_test_data.hpp"
#include "test_util.hpp"

namespace doppio {
namespace {

namespace fs = std::filesystem;

std::string Doppio() { return BinaryDir() + "/tools/doppio"; }
// The tool's test build, which reads DOPPIO_FAIL_RANK/ITER/MODE (tools/faults/).
std::string DoppioFaults() { return BinaryDir() + "/tools/doppio_faults"; }

std::string ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void WriteText(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

struct JobResult {
  int exit_code;  // -1: killed by a signal or by the timeout
  std::string output;
  double seconds;
};

// Runs `command` (argv[0] looked up in PATH) with stdout and stderr in `log`.
JobResult RunJob(const std::vector<std::string>& command, const std::string& log,
                 double timeout_seconds = 120) {
  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = fork();
  if (pid == 0) {
    const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) _exit(126);
    dup2(fd, 1);
    dup2(fd, 2);
    // Its own process group, so that a timeout can end mpiexec and its ranks together.
    setpgid(0, 0);
    setenv("GLOG_logtostderr", "1", 1);
    std::vector<std::string> args = command;
    std::vector<char*> argv;
    for (auto& arg : args) argv.push_back(arg.data());
    argv.push_back(nullptr);
    execvp(argv[0], argv.data());
    _exit(127);
  }
  const auto deadline = start + std::chrono::duration<double>(timeout_seconds);
  int status = 0;
  int code = -1;
  while (true) {
    const pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) {
      code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      break;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      ADD_FAILURE() << "the job did not end within " << timeout_seconds << " s";
      kill(-pid, SIGKILL);
      waitpid(pid, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return {code, ReadText(log), seconds};
}

class ParallelCliTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    // 16 x 16 images: enough computation in backward for the communication to hide behind.
    parallel_test::WriteRecords(dir_->path() + "/train", 0, 97, 16);
    parallel_test::WriteRecords(dir_->path() + "/test", 500, 40, 16);
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  void SetUp() override {
    ASSERT_TRUE(fs::exists(Doppio())) << Doppio() << " is missing: build doppio_cli first";
  }
  static std::string Path(const std::string& name) { return dir_->path() + "/" + name; }

  // A net of batch `batch` per rank, and a solver for it; returns the solver file.
  static std::string Solver(const std::string& name, int batch, const std::string& extra = "",
                            int conv_outputs = 32) {
    std::ostringstream net;
    net << "name: 'cli' "
        << "layer { name: 'data' type: 'Data' top: 'data' top: 'label' include { phase: TRAIN } "
        << "  transform_param { scale: 0.00390625 } data_param { source: '" << Path("train")
        << "' batch_size: " << batch << " backend: LMDB } } "
        << "layer { name: 'data' type: 'Data' top: 'data' top: 'label' include { phase: TEST } "
        << "  transform_param { scale: 0.00390625 } data_param { source: '" << Path("test")
        << "' batch_size: 4 backend: LMDB } } "
        << "layer { name: 'conv1' type: 'Convolution' bottom: 'data' top: 'conv1' "
        << "  convolution_param { num_output: " << conv_outputs << " kernel_size: 5 pad: 2 "
        << "    weight_filler { type: 'xavier' } } } "
        << "layer { name: 'relu1' type: 'ReLU' bottom: 'conv1' top: 'conv1' } "
        << "layer { name: 'pool1' type: 'Pooling' bottom: 'conv1' top: 'pool1' "
        << "  pooling_param { pool: MAX kernel_size: 2 stride: 2 } } "
        << "layer { name: 'ip1' type: 'InnerProduct' bottom: 'pool1' top: 'ip1' "
        << "  inner_product_param { num_output: 64 weight_filler { type: 'xavier' } } } "
        << "layer { name: 'relu2' type: 'ReLU' bottom: 'ip1' top: 'ip1' } "
        << "layer { name: 'ip2' type: 'InnerProduct' bottom: 'ip1' top: 'ip2' "
        << "  inner_product_param { num_output: 4 weight_filler { type: 'xavier' } } } "
        << "layer { name: 'loss' type: 'SoftmaxWithLoss' bottom: 'ip2' bottom: 'label' top: 'loss' "
           "} "
        << "layer { name: 'accuracy' type: 'Accuracy' bottom: 'ip2' bottom: 'label' "
        << "  top: 'accuracy' include { phase: TEST } } ";
    WriteText(Path(name + "_net.prototxt"), net.str());
    SolverParameter param = ParseText<SolverParameter>(
        "base_lr: 0.05 momentum: 0.9 weight_decay: 0.0005 lr_policy: 'fixed' max_iter: 10 "
        "display: 5 random_seed: 7 snapshot_after_train: true");
    param.MergeFrom(ParseText<SolverParameter>(extra));
    param.set_net(Path(name + "_net.prototxt"));
    param.set_snapshot_prefix(Path(name));
    std::string solver;
    google::protobuf::TextFormat::PrintToString(param, &solver);
    WriteText(Path(name + "_solver.prototxt"), solver);
    return Path(name + "_solver.prototxt");
  }

  static std::vector<std::string> Mpiexec(int ranks, const std::vector<std::string>& extra = {}) {
    std::vector<std::string> command = {"mpiexec", "--allow-run-as-root", "--oversubscribe"};
    command.insert(command.end(), extra.begin(), extra.end());
    command.push_back("-np");
    command.push_back(std::to_string(ranks));
    return command;
  }

  static JobResult Train(int ranks, const std::vector<std::string>& flags,
                         const std::vector<std::string>& mpi_options = {}, double timeout = 120,
                         const std::string& binary = Doppio()) {
    std::vector<std::string> command = Mpiexec(ranks, mpi_options);
    command.push_back(binary);
    command.push_back("train");
    command.insert(command.end(), flags.begin(), flags.end());
    return RunJob(command, Path("log.txt"), timeout);
  }

  static std::vector<float> Weights(const std::string& caffemodel) {
    NetParameter param;
    ReadProtoFromBinaryFile(caffemodel, &param);
    std::vector<float> values;
    for (const auto& layer : param.layer()) {
      for (const auto& blob : layer.blobs()) {
        values.insert(values.end(), blob.data().begin(), blob.data().end());
      }
    }
    return values;
  }

  static int CountLines(const std::string& text, const std::string& part) {
    int count = 0;
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);)
      count += line.find(part) != std::string::npos;
    return count;
  }

  static TempDir* dir_;
};
TempDir* ParallelCliTest::dir_ = nullptr;

TEST_F(ParallelCliTest, TwoRanksTrainOnShardsAndRank0ReportsTheWholeTestSet) {
  const auto result = Train(2, {"--solver=" + Solver("two", 3, "test_iter: 10 test_interval: 5")});
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_CONTAINS(result.output, "Data-parallel training on MPI");
  EXPECT_CONTAINS(result.output, "Batch: 3 per rank on 2 ranks: global batch 6");
  EXPECT_CONTAINS(result.output, "Each rank reads its own shard (block-cyclic) of the data");
  EXPECT_CONTAINS(result.output, "test batches are split among the ranks (5 on rank 0)");
  EXPECT_CONTAINS(result.output, "Broadcast rank 0's initial weights to 2 ranks");
  EXPECT_CONTAINS(result.output, "base_lr 0.05 is used unchanged");
  EXPECT_CONTAINS(result.output, "Test scores are means over all 10 test batches of the 2 ranks");
  // Rank 0 alone prints the scores: one accuracy line per test (iterations 0, 5 and 10).
  EXPECT_EQ(CountLines(result.output, "Test net output #0: accuracy"), 3) << result.output;
  EXPECT_EQ(CountLines(result.output, "hidden behind backward"), 2) << result.output;
  EXPECT_CONTAINS(result.output, "compute per iteration slowest rank");
  // Rank 1 logs no INFO line.
  EXPECT_FALSE(std::regex_search(result.output, std::regex("\nI[0-9]{4} [0-9:.]+ rank 1 ")));
  EXPECT_TRUE(fs::exists(Path("two_iter_10.caffemodel")));
}

TEST_F(ParallelCliTest, AFailingRankEndsTheJobPromptlyNamingIt) {
  const std::string solver = Solver("fault", 3, "max_iter: 100000 display: 0", 8);
  for (const std::string mode : {"error", "crash", "exit"}) {
    SCOPED_TRACE(mode);
    const auto result = Train(
        2, {"--solver=" + solver},
        {"-x", "DOPPIO_FAIL_RANK=1", "-x", "DOPPIO_FAIL_ITER=3", "-x", "DOPPIO_FAIL_MODE=" + mode},
        60, DoppioFaults());
    EXPECT_NE(result.exit_code, 0) << result.output;
    // An Error aborts the job with the user-error code, through mpirun.
    if (mode == "error") EXPECT_EQ(result.exit_code, 1) << result.output;
    EXPECT_LT(result.seconds, 20) << result.output;
    // The rank's own message, with the rank in its log prefix.
    EXPECT_TRUE(std::regex_search(
        result.output, std::regex("E[0-9]{4} [0-9:.]+ rank 1 [a-z_]+\\.cpp:[0-9]+\\] .*rank 1 "
                                  "fails at iteration 3")))
        << result.output;
    // mpiexec names it too.
    if (mode == "error") EXPECT_CONTAINS(result.output, "(aborting all 2 ranks)");
    if (mode == "crash") EXPECT_CONTAINS(result.output, "rank 1 with PID");
    EXPECT_FALSE(fs::exists(Path("fault_iter_100000.caffemodel")));
  }
}

TEST_F(ParallelCliTest, ANaNOnOneRankStopsEveryRankWithExitCode3AndNoSnapshotOfIt) {
  const std::string solver = Solver("nan", 3, "max_iter: 100 display: 0 snapshot: 1", 8);
  const auto result =
      Train(2, {"--solver=" + solver},
            {"-x", "DOPPIO_FAIL_RANK=1", "-x", "DOPPIO_FAIL_ITER=3", "-x", "DOPPIO_FAIL_MODE=nan"},
            60, DoppioFaults());
  EXPECT_EQ(result.exit_code, 3) << result.output;
  EXPECT_LT(result.seconds, 30) << result.output;
  // Every rank logs rank 1's message.
  const std::string message = "rank 1: Iteration 3 (lr = 0.05): training diverged: ";
  EXPECT_EQ(CountLines(result.output, message), 2) << result.output;
  EXPECT_CONTAINS(result.output, "top blob 'data' of layer 'data' (Data)");
  EXPECT_TRUE(fs::exists(Path("nan_iter_3.caffemodel")));
  EXPECT_FALSE(fs::exists(Path("nan_iter_4.caffemodel")));
  EXPECT_FALSE(fs::exists(Path("nan_iter_4.solverstate")));
}

TEST_F(ParallelCliTest, TheWatchdogNamesTheRankThatDidNotArrive) {
  const auto result = Train(
      2, {"--solver=" + Solver("hang", 3, "max_iter: 100000 display: 0", 8), "--comm_timeout=2"},
      {"-x", "DOPPIO_FAIL_RANK=1", "-x", "DOPPIO_FAIL_ITER=2", "-x", "DOPPIO_FAIL_MODE=hang"}, 60,
      DoppioFaults());
  // The lost-rank exit code, passed on by mpirun.
  EXPECT_EQ(result.exit_code, 4) << result.output;
  EXPECT_LT(result.seconds, 25) << result.output;
  EXPECT_CONTAINS(result.output,
                  "did not complete within 2 s (--comm_timeout): rank 1 did not arrive");
  EXPECT_TRUE(std::regex_search(
      result.output, std::regex("W[0-9]{4} [0-9:.]+ rank 1 distributed_solver\\.cpp:[0-9]+"
                                "\\] fault injection armed")))
      << result.output;
}

TEST_F(ParallelCliTest, RanksWithDifferentNetsAreRefusedNamingTheRank) {
  // MPMD: rank 0 and rank 1 run different solver files.
  std::vector<std::string> command = {"mpiexec",
                                      "--allow-run-as-root",
                                      "--oversubscribe",
                                      "-np",
                                      "1",
                                      Doppio(),
                                      "train",
                                      "--solver=" + Solver("same", 3),
                                      ":",
                                      "-np",
                                      "1",
                                      Doppio(),
                                      "train",
                                      "--solver=" + Solver("other", 3, "", 16)};
  const auto result = RunJob(command, Path("log.txt"), 60);
  EXPECT_EQ(result.exit_code, 1) << result.output;
  EXPECT_CONTAINS(result.output, "rank 1 has different nets");
  EXPECT_CONTAINS(result.output, "refusing to train");
  // Every rank stopped at the same point: no abort was needed.
  EXPECT_EQ(result.output.find("MPI_ABORT"), std::string::npos) << result.output;
}

TEST_F(ParallelCliTest, BadFlagsStopEveryRankWithTheMessage) {
  const auto result = Train(2, {"--solver=" + Solver("flags", 3), "--sync=ring"});
  EXPECT_EQ(result.exit_code, 1) << result.output;
  EXPECT_CONTAINS(result.output, "--sync must be overlap, reduce_bcast or blocking, not 'ring'");
  const auto missing = Train(2, {"--solver=" + Path("absent.prototxt")});
  EXPECT_EQ(missing.exit_code, 1) << missing.output;
  EXPECT_CONTAINS(missing.output, "absent.prototxt");
  const auto snapshot =
      Train(2, {"--solver=" + Solver("flags", 3), "--snapshot=" + Path("absent.solverstate")});
  EXPECT_EQ(snapshot.exit_code, 1) << snapshot.output;
  EXPECT_CONTAINS(snapshot.output, "rank 0 could not read the snapshot");
}

TEST_F(ParallelCliTest, TcpGivesTheSameWeightsAsSharedMemory) {
  const std::string solver = Solver("net", 3);
  for (const std::string btl : {"vader,self", "tcp,self"}) {
    const auto result = Train(2, {"--solver=" + solver}, {"--mca", "btl", btl});
    ASSERT_EQ(result.exit_code, 0) << result.output;
    fs::rename(Path("net_iter_10.caffemodel"), Path("net_" + btl.substr(0, 3) + ".caffemodel"));
  }
  const auto shared = Weights(Path("net_vad.caffemodel"));
  const auto tcp = Weights(Path("net_tcp.caffemodel"));
  ASSERT_EQ(shared.size(), tcp.size());
  ASSERT_GT(shared.size(), 1000u);
  for (std::size_t i = 0; i < shared.size(); ++i) {
    ASSERT_NEAR(shared[i], tcp[i], 1e-6 + 1e-5 * std::fabs(shared[i])) << i;
  }
}

TEST_F(ParallelCliTest, ResumingWorksWithADifferentNumberOfRanks) {
  // Two ranks of batch 3 write a snapshot at 5; one process of batch 6 goes on to 10.
  auto two = Train(2, {"--solver=" + Solver("resume2", 3, "snapshot: 5")});
  ASSERT_EQ(two.exit_code, 0) << two.output;
  const std::string one_solver = Solver("resume1", 6);
  auto one = RunJob({Doppio(), "train", "--solver=" + one_solver,
                     "--snapshot=" + Path("resume2_iter_5.solverstate")},
                    Path("log.txt"));
  ASSERT_EQ(one.exit_code, 0) << one.output;
  EXPECT_CONTAINS(one.output, "Restored solver state at iteration 5");
  EXPECT_TRUE(fs::exists(Path("resume1_iter_10.caffemodel")));
  // And back: one process's snapshot resumed by three ranks (rank 0 reads it).
  auto three = Train(
      3, {"--solver=" + Solver("resume3", 2), "--snapshot=" + Path("resume2_iter_5.solverstate")});
  ASSERT_EQ(three.exit_code, 0) << three.output;
  EXPECT_CONTAINS(three.output,
                  "sent its iteration (5), learning-rate state, history and weights "
                  "to all 3 ranks");
  EXPECT_TRUE(fs::exists(Path("resume3_iter_10.caffemodel")));
}

TEST_F(ParallelCliTest, TimelineShowsAllreducesOverlappingBackward) {
  const auto result =
      Train(2, {"--solver=" + Solver("trace", 8, "max_iter: 6 test_iter: 2 test_interval: 3"),
                "--timeline=" + Path("trace.json"), "--bucket_mb=0.01"});
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_CONTAINS(result.output, "Timeline of 2 ranks");
  const std::string json = ReadText(Path("trace.json"));
  ASSERT_FALSE(json.empty());
  struct Span {
    std::string name;
    int pid, tid;
    double ts, dur;
  };
  std::vector<Span> spans;
  const std::regex event(
      "\\{\"name\":\"([^\"]*)\",\"cat\":\"[^\"]*\",\"ph\":\"X\",\"pid\":([0-9]+),\"tid\":([0-9]+),"
      "\"ts\":([0-9.]+),\"dur\":([0-9.]+)");
  std::istringstream lines(json);
  for (std::string line; std::getline(lines, line);) {
    std::smatch match;
    // Every span starts after the run began (no timestamp left at the clock's zero).
    if (line.find("\"ph\":\"X\"") != std::string::npos) {
      EXPECT_TRUE(std::regex_search(line, match, event)) << line;
    }
    if (std::regex_search(line, match, event)) {
      spans.push_back({match[1], std::stoi(match[2]), std::stoi(match[3]), std::stod(match[4]),
                       std::stod(match[5])});
    }
  }
  ASSERT_GT(spans.size(), 100u);
  auto inside_backward = [&](int rank, double time) {
    for (const Span& layer : spans) {
      if (layer.pid == rank && layer.name.rfind("backward", 0) == 0 && layer.ts < time &&
          time < layer.ts + layer.dur) {
        return true;
      }
    }
    return false;
  };
  int started_during_backward = 0;
  for (int rank : {0, 1}) {
    int allreduces = 0, released_during_backward = 0;
    for (const Span& comm : spans) {
      if (comm.pid != rank || comm.tid != 1) continue;
      // The "queued" span begins when backward hands the bucket over.
      if (comm.name.rfind("queued: allreduce bucket 0", 0) == 0) {
        released_during_backward += inside_backward(rank, comm.ts);
      }
      if (comm.name.rfind("allreduce bucket", 0) == 0) {
        ++allreduces;
        started_during_backward += inside_backward(rank, comm.ts);
      }
    }
    // Two buckets in each of 6 iterations; the first one always leaves while the layers
    // below ip1 are still in backward.
    EXPECT_EQ(allreduces, 12) << "rank " << rank;
    EXPECT_EQ(released_during_backward, 6) << "rank " << rank;
  }
  // Whether the communication thread gets a core before backward ends is up to the
  // scheduler on a busy machine; it normally does on at least one rank.
  if (started_during_backward == 0) {
    std::cerr << "note: no allreduce started during backward in this run\n";
  }
}

TEST_F(ParallelCliTest, EverySyncModeAndTheLearningRateFlags) {
  for (const std::string sync : {"reduce_bcast", "blocking"}) {
    const auto result = Train(2, {"--solver=" + Solver("mode", 3, "max_iter: 4"), "--sync=" + sync,
                                  "--scale_lr", "--lr_warmup_iters=2"});
    ASSERT_EQ(result.exit_code, 0) << result.output;
    EXPECT_CONTAINS(result.output, "--sync=" + sync);
    EXPECT_CONTAINS(result.output, "--scale_lr: base_lr 0.05 x 2 ranks = 0.1");
    EXPECT_CONTAINS(result.output, "rises linearly from 0.5 x to 1 x over the first 2 iterations");
  }
}

TEST_F(ParallelCliTest, GradCompressionIsLoggedAndItsBadValuesAreRefused) {
  const auto result = Train(2, {"--solver=" + Solver("compressed", 3, "max_iter: 4 display: 2"),
                                "--grad_compression=fp16"});
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_CONTAINS(result.output, "Gradient compression: --grad_compression=fp16");
  EXPECT_CONTAINS(result.output, "sent per iteration by rank 0 (--grad_compression=fp16, ");
  // The refusals need no MPI job: the one-rank case checks the same.
  for (const std::string value : {"topk:0", "topk:1.5", "powersgd:0", "gzip"}) {
    const auto bad = RunJob(
        {Doppio(), "train", "--solver=" + Solver("compressed", 3), "--grad_compression=" + value},
        Path("log.txt"));
    EXPECT_EQ(bad.exit_code, 1) << bad.output;
    EXPECT_CONTAINS(bad.output, "--grad_compression");
    EXPECT_CONTAINS(bad.output, value);
  }
  const auto both = RunJob({Doppio(), "train", "--solver=" + Solver("compressed", 3),
                            "--grad_compression=topk:0.1", "--sync=reduce_bcast"},
                           Path("log.txt"));
  EXPECT_EQ(both.exit_code, 1) << both.output;
  EXPECT_CONTAINS(both.output, "--grad_compression=topk:0.1 is lossy and --sync=reduce_bcast");
}

TEST_F(ParallelCliTest, LrScalingScalesToTheGlobalBatchAndRefusesBadValues) {
  const auto result = Train(2, {"--solver=" + Solver("scaling", 3, "max_iter: 2 iter_size: 2"),
                                "--lr_scaling=linear", "--lr_warmup_iters=2"});
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_CONTAINS(result.output,
                  "Learning rate scaling (--lr_scaling=linear): global batch 12, reference batch "
                  "3 (the per-process batch): base_lr 0.05 x 4 = 0.2; the warm-up starts from "
                  "the reference rate (0.25 x)");
  const auto bad = RunJob(
      {Doppio(), "train", "--solver=" + Solver("scaling", 3, "max_iter: 2"), "--lr_scaling=cubic"},
      Path("log.txt"));
  EXPECT_EQ(bad.exit_code, 1) << bad.output;
  EXPECT_CONTAINS(bad.output, "--lr_scaling must be linear, sqrt or none, not 'cubic'");
}

TEST_F(ParallelCliTest, PlainTrainIsTheOneRankCase) {
  const auto result = RunJob({Doppio(), "train", "--solver=" + Solver("plain", 6, "max_iter: 3"),
                              "--timeline=" + Path("plain.json")},
                             Path("log.txt"));
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_CONTAINS(result.output, "Batch: 6 per rank on 1 rank: global batch 6");
  EXPECT_EQ(result.output.find("Data-parallel"), std::string::npos);
  EXPECT_CONTAINS(ReadText(Path("plain.json")), "\"backward conv1\"");
}

}  // namespace
}  // namespace doppio
