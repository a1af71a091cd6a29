// One rank count of the data-parallel benchmark: trains models/<model>/train_val.prototxt on
// synthetic inputs (its Data layers replaced by constant inputs of the same shape, batch per
// rank) through DistributedSolver, for each --sync mode in turn, and prints one JSON line per
// mode from rank 0: per-iteration wall time, compute (forward + backward), exposed
// communication wait, communication time and the part of it hidden behind backward, each the
// mean over the ranks of the best timed window. bench/parallel_scaling.py runs it for np=1
// and np=2 and makes the table.
//
//   mpiexec -np 2 build/bench/bench_parallel_scaling --model=lenet --batch=64
#include <gflags/gflags.h>
#include <glog/logging.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "doppio/parallel/distributed_solver.hpp"
#include "doppio/parallel/mpi_communicator.hpp"
#include "doppio/util/io.hpp"
#include "doppio/util/math_functions.hpp"
#include "synthetic_inputs.hpp"

DEFINE_string(model, "lenet", "models/<model>/train_val.prototxt");
DEFINE_string(root, ".", "The repository root (models/ is under it).");
DEFINE_int32(batch, 64, "Batch per rank.");
DEFINE_string(image, "", "C,H,W of the synthetic images when the net has no crop_size.");
DEFINE_string(syncs, "overlap,reduce_bcast,blocking", "The --sync modes to time, in turn.");
DEFINE_double(bucket_mb, 25, "Gradient bucket size in MB.");
DEFINE_int32(warmup, 2, "Untimed iterations before timing each mode.");
DEFINE_int32(iterations, 10, "Iterations in one timed window.");
DEFINE_int32(repeats, 3, "Timed windows per mode; the fastest counts.");
DEFINE_int32(threads, 1, "BLAS threads per rank.");

namespace doppio {
namespace {

std::vector<std::string> Split(const std::string& text) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = text.find(',', start);
    const std::string part =
        text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (!part.empty()) parts.push_back(part);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return parts;
}

int Run() {
  std::shared_ptr<Communicator> comm;
  if (MpiCommunicator::LaunchedByMpi()) {
    comm = std::make_shared<MpiCommunicator>();
  } else {
    comm = std::make_shared<SelfCommunicator>();
  }
  comm->set_timeout(600);
  SetBlasThreads(FLAGS_threads);
  std::vector<int> image;
  for (const std::string& part : Split(FLAGS_image)) image.push_back(std::stoi(part));
  const NetParameter net = WithSyntheticInputs(
      ReadNetParamsFromTextFile(FLAGS_root + "/models/" + FLAGS_model + "/train_val.prototxt"),
      FLAGS_batch, image);
  for (const std::string& name : Split(FLAGS_syncs)) {
    ParallelOptions options;
    options.sync = ParseSyncMode(name);
    options.bucket_mb = FLAGS_bucket_mb;
    SolverParameter param;
    param.set_type("SGD");
    param.set_base_lr(1e-4f);
    param.set_momentum(0.9f);
    param.set_lr_policy("fixed");
    param.set_display(0);
    param.set_random_seed(1);
    param.set_snapshot_after_train(false);
    param.set_max_iter(1 << 30);
    *param.mutable_net_param() = net;
    DistributedSolver<float> trainer(param, comm, options, FaultInjection());
    trainer.solver()->Step(FLAGS_warmup);
    // Per iteration, this rank: wall, compute, wait, comm, hidden.
    std::vector<double> best;
    for (int repeat = 0; repeat < FLAGS_repeats; ++repeat) {
      comm->Barrier("window");
      const ParallelTotals before = trainer.totals();
      const auto start = std::chrono::steady_clock::now();
      trainer.solver()->Step(FLAGS_iterations);
      const double wall =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      const ParallelTotals& after = trainer.totals();
      const double n = FLAGS_iterations;
      std::vector<double> mine = {wall / n, (after.compute - before.compute) / n,
                                  (after.wait - before.wait) / n, (after.comm - before.comm) / n,
                                  (after.hidden - before.hidden) / n};
      // The slowest rank's wall time decides the window.
      double slowest = mine[0];
      comm->Allreduce(&slowest, 1, CommType::kDouble, ReduceOp::kMax, "window time");
      mine[0] = slowest;
      if (best.empty() || mine[0] < best[0]) best = mine;
    }
    std::vector<double> all(5 * comm->size());
    comm->Allgather(best.data(), all.data(), 5, CommType::kDouble, "results");
    if (comm->rank() == 0) {
      double sums[5] = {0, 0, 0, 0, 0};
      for (int r = 0; r < comm->size(); ++r) {
        for (int k = 0; k < 5; ++k) sums[k] += all[5 * r + k];
      }
      const double ranks = comm->size();
      std::size_t gradient_bytes = 0;
      for (const auto& bucket : trainer.sync().buckets()) gradient_bytes += bucket.count * 4;
      std::printf(
          "{\"model\": \"%s\", \"np\": %d, \"sync\": \"%s\", \"batch\": %d, \"buckets\": %zu, "
          "\"gradient_mb\": %.1f, \"iter_ms\": %.3f, \"compute_ms\": %.3f, \"wait_ms\": %.3f, "
          "\"comm_ms\": %.3f, \"hidden_ms\": %.3f}\n",
          FLAGS_model.c_str(), comm->size(), name.c_str(), FLAGS_batch,
          trainer.sync().buckets().size(), gradient_bytes / 1048576.0, 1e3 * best[0],
          1e3 * sums[1] / ranks, 1e3 * sums[2] / ranks, 1e3 * sums[3] / ranks,
          1e3 * sums[4] / ranks);
      std::fflush(stdout);
    }
    if (comm->size() == 1) break;  // one process: the modes do not differ
  }
  return 0;
}

}  // namespace
}  // namespace doppio

int main(int argc, char** argv) {
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  google::InitGoogleLogging(argv[0]);
  FLAGS_logtostderr = true;
  FLAGS_minloglevel = google::WARNING;
  try {
    return doppio::Run();
  } catch (const doppio::Error& error) {
    LOG(ERROR) << error.what();
    return 1;
  }
}
