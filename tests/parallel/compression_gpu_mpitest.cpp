// --grad_compression with the gradients in device memory, as an MPI job of 2 ranks sharing a
// GPU (CUDA builds; under the emulation on the CPU; skipped without a device): GradientSync
// on the GPU, its buckets staged through MPI, gives what GradientSync on the host gives for
// the same gradients (fp16, bf16 and top-k bit for bit, PowerSGD within float rounding), in
// both sync modes, with iter_size 2 and --compression_start_iter; and its state (residuals,
// PowerSGD's Q), gathered for a .solverstate and restored, continues identically on the GPU
// and as closely as the methods allow on the host; a GPU training run resumed from its
// snapshot ends with the weights of an uninterrupted one.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "doppio/parallel/compression_state.hpp"
#include "doppio/parallel/distributed_solver.hpp"
#include "doppio/parallel/gpu_selection.hpp"
#include "doppio/parallel/gradient_sync.hpp"
#include "doppio/util/io.hpp"
#include "doppio/util/rng.hpp"
#include "gpu_test_util.hpp"
#include "mpi_test_util.hpp"
#include "parallel_test_data.hpp"
#include "test_util.hpp"

namespace doppio {
namespace {

using mpi_test::World;

// Parameters of every kind PowerSGD meets: a 4-axis convolution, two matrices, vectors.
NetParameter TinyNet() {
  return ParseText<NetParameter>(
      "name: 'tiny' "
      "layer { name: 'data' type: 'Input' top: 'data' "
      "  input_param { shape { dim: 2 dim: 3 dim: 5 dim: 5 } } } "
      "layer { name: 'conv1' type: 'Convolution' bottom: 'data' top: 'conv1' "
      "  convolution_param { num_output: 3 kernel_size: 3 pad: 1 } } "
      "layer { name: 'ip1' type: 'InnerProduct' bottom: 'conv1' top: 'ip1' "
      "  inner_product_param { num_output: 12 } } "
      "layer { name: 'ip2' type: 'InnerProduct' bottom: 'ip1' top: 'ip2' "
      "  inner_product_param { num_output: 4 } } ");
}

// One side of the comparison: a net on the host or on the GPU, and its GradientSync.
struct Side {
  Side(const std::string& method, SyncMode mode, int iter_size, int start_iter,
       std::shared_ptr<GpuContext> gpu)
      : comm(gpu ? MakeGpuCommunicator(World(), gpu, GpuCommRequest::kAuto, 64) : World()),
        net(TinyNet(), 1701, gpu),
        // About 500 bytes a bucket: several buckets.
        sync(&net, comm.get(), mode, 0.0005, iter_size, nullptr, ParseGradCompression(method),
             start_iter) {}

  // One iteration whose backward leaves `gradient` in the arena; the mean over the ranks.
  std::vector<float> Iterate(const std::vector<float>& gradient, int iter, int iter_size) {
    std::copy(gradient.begin(), gradient.end(), net.mutable_arena_diff());
    if (net.gpu_context()) net.mutable_arena_gpu_diff();
    sync.BeginIteration(iter);
    for (int pass = 0; pass < iter_size; ++pass) {
      for (int layer = static_cast<int>(net.layers().size()) - 1; layer >= 0; --layer) {
        sync.AfterBackward(layer);
      }
    }
    sync.FinishGradients();
    return std::vector<float>(net.arena_diff(), net.arena_diff() + net.arena_count());
  }

  std::shared_ptr<Communicator> comm;
  Net<float> net;
  GradientSync<float> sync;
};

// Different on every rank and iteration.
std::vector<float> RankGradient(std::size_t count, int iter) {
  Rng rng(1000 * iter + World()->rank());
  std::vector<float> values(count);
  for (float& value : values) value = static_cast<float>(rng.Gaussian(0, 1));
  return values;
}

void ExpectSame(const std::string& method, const std::vector<float>& host,
                const std::vector<float>& device, const std::string& what) {
  ASSERT_EQ(host.size(), device.size()) << what;
  if (method.rfind("powersgd", 0) == 0) {
    ExpectClose(host.data(), device.data(), static_cast<int>(host.size()), 1e-4, what);
  } else {
    EXPECT_EQ(device, host) << what;
  }
}

TEST(CompressionGpuTest, GpuGradientSyncEqualsTheHosts) {
  DOPPIO_REQUIRE_GPU();
  struct Case {
    std::string method;
    SyncMode mode;
    int iter_size, start_iter;
  };
  const Case cases[] = {
      {"fp16", SyncMode::kOverlap, 1, 0},       {"bf16", SyncMode::kBlocking, 1, 0},
      {"topk:1", SyncMode::kOverlap, 1, 0},     {"topk:0.3", SyncMode::kBlocking, 1, 0},
      {"topk:0.3", SyncMode::kOverlap, 2, 1},   {"powersgd:2", SyncMode::kOverlap, 1, 0},
      {"powersgd:2", SyncMode::kBlocking, 2, 0}};
  for (const Case& c : cases) {
    Side host(c.method, c.mode, c.iter_size, c.start_iter, nullptr);
    Side device(c.method, c.mode, c.iter_size, c.start_iter, TestGpu());
    ASSERT_TRUE(device.sync.compressing());
    for (int iter = 0; iter < 2; ++iter) {
      const std::string what = c.method + " --sync=" + SyncModeName(c.mode) + " iter_size " +
                               std::to_string(c.iter_size) + " iteration " + std::to_string(iter);
      const std::vector<float> gradient = RankGradient(host.net.arena_count(), iter);
      ExpectSame(c.method, host.Iterate(gradient, iter, c.iter_size),
                 device.Iterate(gradient, iter, c.iter_size), what);
      ExpectSame(c.method, host.sync.CompressionState(GradientSync<float>::StateField::kResidual),
                 device.sync.CompressionState(GradientSync<float>::StateField::kResidual),
                 what + " residual");
      EXPECT_EQ(device.sync.last_stats().bytes, host.sync.last_stats().bytes) << what;
    }
  }
}

TEST(CompressionGpuTest, AGpuSnapshotsStateResumesIdentically) {
  DOPPIO_REQUIRE_GPU();
  for (const std::string method : {"topk:0.2", "powersgd:2"}) {
    Side first(method, SyncMode::kOverlap, 1, 0, TestGpu());
    first.Iterate(RankGradient(first.net.arena_count(), 0), 0, 1);
    // What a snapshot holds, as every rank has it after the resume's broadcast.
    SolverState saved;
    GatherCompressionState(*World(), first.sync, saved.mutable_compression());
    std::string bytes = saved.SerializeAsString();
    World()->BroadcastBytes(&bytes, 0);
    ASSERT_TRUE(saved.ParseFromString(bytes));
    ASSERT_EQ(saved.compression().method(), method);

    Side resumed(method, SyncMode::kOverlap, 1, 0, TestGpu());
    RestoreCompressionState(saved, World()->size(), World()->rank(), "snapshot", &resumed.sync);
    Side on_host(method, SyncMode::kOverlap, 1, 0, nullptr);
    RestoreCompressionState(saved, World()->size(), World()->rank(), "snapshot", &on_host.sync);
    EXPECT_EQ(resumed.sync.CompressionState(GradientSync<float>::StateField::kResidual),
              first.sync.CompressionState(GradientSync<float>::StateField::kResidual))
        << method;
    EXPECT_EQ(on_host.sync.CompressionState(GradientSync<float>::StateField::kShared),
              first.sync.CompressionState(GradientSync<float>::StateField::kShared))
        << method;

    const std::vector<float> gradient = RankGradient(first.net.arena_count(), 1);
    const std::vector<float> continued = first.Iterate(gradient, 1, 1);
    EXPECT_EQ(resumed.Iterate(gradient, 1, 1), continued) << method;
    EXPECT_EQ(resumed.sync.CompressionState(GradientSync<float>::StateField::kResidual),
              first.sync.CompressionState(GradientSync<float>::StateField::kResidual))
        << method;
    ExpectSame(method, on_host.Iterate(gradient, 1, 1), continued, method + " on the host");
  }
}

// Training on the GPU from LMDB records, through DistributedSolver, with PowerSGD (residuals
// and Q): a run resumed from the .solverstate of iteration 2 ends where an uninterrupted one
// does. The convolution is
// Caffe's (im2col and cuBLAS), whose sums do not vary from run to run as some of cuDNN's do.
TEST(CompressionGpuTest, AGpuTrainingRunResumesFromItsSnapshotIdentically) {
  DOPPIO_REQUIRE_GPU();
  mpi_test::SharedTempDir dir;
  if (World()->rank() == 0) parallel_test::WriteRecords(dir.path() + "/train", 0, 31);
  World()->Barrier("data written");
  const std::string net =
      "name: 'tiny' "
      "layer { name: 'data' type: 'Data' top: 'data' top: 'label' "
      "  transform_param { scale: 0.00390625 } "
      "  data_param { source: '" +
      dir.path() +
      "/train' batch_size: 3 backend: LMDB } } "
      "layer { name: 'conv1' type: 'Convolution' bottom: 'data' top: 'conv1' "
      "  convolution_param { num_output: 3 kernel_size: 3 pad: 1 engine: CAFFE "
      "    weight_filler { type: 'gaussian' std: 0.3 } } } "
      "layer { name: 'ip1' type: 'InnerProduct' bottom: 'conv1' top: 'ip1' "
      "  inner_product_param { num_output: 4 weight_filler { type: 'gaussian' std: 0.3 } } } "
      "layer { name: 'loss' type: 'SoftmaxWithLoss' bottom: 'ip1' bottom: 'label' top: 'loss' } ";
  auto param = [&](int max_iter, const std::string& extra) {
    SolverParameter param = ParseText<SolverParameter>(
        "type: 'SGD' base_lr: 0.05 momentum: 0.9 lr_policy: 'fixed' display: 0 random_seed: 5 "
        "snapshot_after_train: false max_iter: " +
        std::to_string(max_iter) + " " + extra);
    *param.mutable_net_param() = ParseText<NetParameter>(net);
    return param;
  };
  auto gpu = TestGpu();
  std::shared_ptr<Communicator> comm = MakeGpuCommunicator(World(), gpu, GpuCommRequest::kAuto, 64);
  ParallelOptions options;
  options.gpu = gpu;
  options.bucket_mb = 0.0002;
  options.compression = ParseGradCompression("powersgd:1");
  auto weights = [](DistributedSolver<float>& trainer) {
    const Net<float>& trained = *trainer.solver()->net();
    return std::vector<float>(trained.arena_data(), trained.arena_data() + trained.arena_count());
  };
  DistributedSolver<float> uninterrupted(param(3, ""), comm, options);
  uninterrupted.Solve();
  const std::string prefix = dir.path() + "/gpu";
  {
    DistributedSolver<float> first(param(2, "snapshot: 2 snapshot_prefix: '" + prefix + "'"), comm,
                                   options);
    first.Solve();
  }
  World()->Barrier();
  SolverState state;
  ReadProtoFromBinaryFile(prefix + "_iter_2.solverstate", &state);
  ASSERT_TRUE(state.has_compression());
  ASSERT_TRUE(state.compression().has_shared());
  DistributedSolver<float> resumed(param(3, ""), comm, options);
  resumed.Solve(prefix + "_iter_2.solverstate");
  EXPECT_EQ(weights(resumed), weights(uninterrupted));
}

}  // namespace
}  // namespace doppio
