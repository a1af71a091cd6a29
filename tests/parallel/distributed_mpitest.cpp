// Data-parallel training as an MPI job of 1, 2 or 4 ranks (and over TCP), against one process
// trained on the same data: the correctness invariant of docs/design.md, "Data-parallel training"
// (N ranks with batch B give the weights of 1 rank with batch N*B) for every --sync mode, with SGD
// and Adam, iter_size 2 and shared parameters; the real Data layer reads its shard of a generated
// LMDB. Also the broadcast of rank 0's weights, the test-phase sums, resuming with another number
// of ranks, agreement on stop requests, the timeline, and the refusals of bad input. On a
// machine with GPUs the equivalence is also checked with the gradients in device memory:
// ranks sharing one GPU (staged through MPI), and with NCCL when every rank has its own.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

#include "doppio/device/onednn.hpp"
#include "doppio/parallel/agreement.hpp"
#include "doppio/parallel/distributed_solver.hpp"
#include "doppio/parallel/gpu_selection.hpp"
#include "doppio/parallel/nccl_communicator.hpp"
#include "doppio/parallel/staging_communicator.hpp"
#include "doppio/solvers/solver_registry.hpp"
#include "doppio/util/hdf5.hpp"
#include "doppio/util/io.hpp"
#include "expect_error.hpp"
#include "mpi_test_util.hpp"
#include "parallel_test_data.hpp"
#include "test_util.hpp"

namespace doppio {
namespace {

using mpi_test::World;
namespace fs = std::filesystem;

constexpr int kBatch = 3;  // per rank
constexpr int kTrainRecords = 61;
constexpr int kTestRecords = 29;

void WriteLmdb(const std::string& path, int first, int count) {
  parallel_test::WriteRecords(path, first, count);
}

// The training records as HDF5 files of 20, 0 and 41 rows (HDF5Data reads them), and their
// list.
void WriteHdf5(const std::string& dir) {
  std::ofstream list(dir + "/train_h5.txt");
  int first = 0;
  for (int rows : {20, 0, kTrainRecords - 20}) {
    std::vector<float> data, label;
    for (int i = first; i < first + rows; ++i) {
      const Datum datum = parallel_test::Record(i);
      for (unsigned char pixel : datum.data()) data.push_back(pixel * 0.00390625f);
      label.push_back(static_cast<float>(datum.label()));
    }
    Hdf5Writer file;
    file.Write("data", {rows, 1, 4, 4}, data.data());
    file.Write("label", {rows}, label.data());
    const std::string path = dir + "/train" + std::to_string(first) + ".h5";
    WriteFileAtomically(file.Image(), path);
    list << path << "\n";
    first += rows;
  }
}

// The net's variants: plain; with a parameter shared by two layers; with every random part
// of an ImageNet net (random crop and mirror of each record, Dropout); reading its training
// records from shuffled HDF5 files.
enum class Variant { kPlain, kShared, kAugmented, kHdf5 };

std::string Net(const std::string& dir, int train_batch, int test_batch,
                Variant variant = Variant::kPlain, int hidden = 12) {
  std::ostringstream s;
  const bool shared = variant == Variant::kShared, augmented = variant == Variant::kAugmented;
  const std::string share = shared ? "param { name: 'sq' } param { } " : "";
  s << "name: 'tiny' ";
  if (variant == Variant::kHdf5) {
    s << "layer { name: 'data' type: 'HDF5Data' top: 'data' top: 'label' include { phase: TRAIN } "
      << "  hdf5_data_param { source: '" << dir << "/train_h5.txt' batch_size: " << train_batch
      << " shuffle: true } } ";
  } else {
    s << "layer { name: 'data' type: 'Data' top: 'data' top: 'label' include { phase: TRAIN } "
      << "  transform_param { scale: 0.00390625 " << (augmented ? "crop_size: 3 mirror: true " : "")
      << "} "
      << "  data_param { source: '" << dir << "/train' batch_size: " << train_batch
      << " backend: LMDB } } ";
  }
  s << "layer { name: 'data' type: 'Data' top: 'data' top: 'label' include { phase: TEST } "
    << "  transform_param { scale: 0.00390625 " << (augmented ? "crop_size: 3 " : "") << "} "
    << "  data_param { source: '" << dir << "/test' batch_size: " << test_batch
    << " backend: LMDB } } "
    << "layer { name: 'conv1' type: 'Convolution' bottom: 'data' top: 'conv1' "
    << "  convolution_param { num_output: 3 kernel_size: 3 pad: 1 "
    << "    weight_filler { type: 'gaussian' std: 0.3 } bias_filler { type: 'constant' value: 0.1 "
       "} } } "
    << "layer { name: 'relu1' type: 'ReLU' bottom: 'conv1' top: 'conv1' } "
    << "layer { name: 'pool1' type: 'Pooling' bottom: 'conv1' top: 'pool1' "
    << "  pooling_param { pool: MAX kernel_size: 2 stride: 2 } } "
    << "layer { name: 'ip1' type: 'InnerProduct' bottom: 'pool1' top: 'ip1' " << share
    << "  inner_product_param { num_output: " << hidden
    << "    weight_filler { type: 'gaussian' std: 0.3 } bias_filler { type: 'constant' value: 0.05 "
       "} } } "
    << "layer { name: 'relu2' type: 'ReLU' bottom: 'ip1' top: 'ip1' } ";
  if (augmented) {
    s << "layer { name: 'drop1' type: 'Dropout' bottom: 'ip1' top: 'ip1' "
      << "  dropout_param { dropout_ratio: 0.5 } } ";
  }
  std::string top = "ip1";
  if (shared) {
    // The same 12 x 12 weights again: its gradient is final only after ip1's backward.
    s << "layer { name: 'ip1b' type: 'InnerProduct' bottom: 'ip1' top: 'ip1b' " << share
      << "  inner_product_param { num_output: 12 bias_filler { type: 'constant' value: 0.02 } } } "
      << "layer { name: 'relu3' type: 'ReLU' bottom: 'ip1b' top: 'ip1b' } ";
    top = "ip1b";
  }
  s << "layer { name: 'ip2' type: 'InnerProduct' bottom: '" << top << "' top: 'ip2' "
    << "  inner_product_param { num_output: 4 weight_filler { type: 'gaussian' std: 0.3 } } } "
    << "layer { name: 'loss' type: 'SoftmaxWithLoss' bottom: 'ip2' bottom: 'label' top: 'loss' } "
    << "layer { name: 'accuracy' type: 'Accuracy' bottom: 'ip2' bottom: 'label' top: 'accuracy' "
    << "  include { phase: TEST } } ";
  return s.str();
}

SolverParameter Param(const std::string& type, const std::string& net, int iter_size = 1,
                      int max_iter = 6, const std::string& extra = "") {
  std::string method = type == "Adam" ? "base_lr: 0.01 momentum: 0.9 momentum2: 0.999 delta: 1e-8"
                                      : "base_lr: 0.05 momentum: 0.9";
  SolverParameter param = ParseText<SolverParameter>(
      "type: '" + type + "' " + method +
      " weight_decay: 0.001 lr_policy: 'fixed' display: 0 random_seed: 5 "
      "snapshot_after_train: false iter_size: " +
      std::to_string(iter_size) + " max_iter: " + std::to_string(max_iter));
  param.MergeFrom(ParseText<SolverParameter>(extra));
  *param.mutable_net_param() = ParseText<NetParameter>(net);
  return param;
}

template <typename Dtype>
std::vector<Dtype> Weights(const Solver<Dtype>& solver) {
  const auto& net = *solver.net();
  return std::vector<Dtype>(net.arena_data(), net.arena_data() + net.arena_count());
}

void ExpectClose(const std::vector<float>& actual, const std::vector<float>& expected,
                 const std::string& what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  int bad = 0;
  for (std::size_t i = 0; i < actual.size() && bad < 5; ++i) {
    const float tolerance = 2e-5f + 2e-4f * std::fabs(expected[i]);
    if (std::fabs(actual[i] - expected[i]) > tolerance) {
      ADD_FAILURE() << what << ": rank " << World()->rank() << " weight " << i << " is "
                    << actual[i] << ", one process has " << expected[i];
      ++bad;
    }
  }
}

// Forwards to the job's communicator, counting the operations by the start of their label.
class CountingCommunicator : public Communicator {
 public:
  explicit CountingCommunicator(std::shared_ptr<Communicator> inner) : inner_(std::move(inner)) {}
  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  int local_rank() const override { return inner_->local_rank(); }
  int local_size() const override { return inner_->local_size(); }
  std::string description() const override { return inner_->description(); }
  CommHandle IAllreduce(void* buffer, std::size_t count, CommType type, ReduceOp op,
                        MemoryKind where, const std::string& label) override {
    Count(label);
    return inner_->IAllreduce(buffer, count, type, op, where, label);
  }
  CommHandle IReduce(void* buffer, std::size_t count, CommType type, ReduceOp op, int root,
                     MemoryKind where, const std::string& label) override {
    Count(label);
    return inner_->IReduce(buffer, count, type, op, root, where, label);
  }
  CommHandle IBroadcast(void* buffer, std::size_t count, CommType type, int root, MemoryKind where,
                        const std::string& label) override {
    Count(label);
    return inner_->IBroadcast(buffer, count, type, root, where, label);
  }
  CommHandle IAllgather(const void* send, void* recv, std::size_t count, CommType type,
                        const std::string& label) override {
    Count(label);
    return inner_->IAllgather(send, recv, count, type, label);
  }
  CommHandle IBarrier(const std::string& label) override {
    Count(label);
    return inner_->IBarrier(label);
  }
  CommHandle IGatherv(const void* send, std::size_t bytes, void* recv,
                      const std::vector<std::size_t>& recv_bytes, int root,
                      const std::string& label) override {
    Count(label);
    return inner_->IGatherv(send, bytes, recv, recv_bytes, root, label);
  }
  void JoinDeviceWork() override { inner_->JoinDeviceWork(); }
  void set_timeout(double seconds) override { inner_->set_timeout(seconds); }
  double timeout() const override { return inner_->timeout(); }
  void Abort(int exit_code) override { inner_->Abort(exit_code); }

  int count(const std::string& prefix) const {
    int n = 0;
    for (const std::string& label : labels) n += label.rfind(prefix, 0) == 0;
    return n;
  }
  std::vector<std::string> labels;

 private:
  void Count(const std::string& label) { labels.push_back(label); }
  std::shared_ptr<Communicator> inner_;
};

class DistributedTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new mpi_test::SharedTempDir();
    if (World()->rank() == 0) {
      WriteLmdb(dir_->path() + "/train", 0, kTrainRecords);
      WriteLmdb(dir_->path() + "/test", 1000, kTestRecords);
      WriteHdf5(dir_->path());
    }
    World()->Barrier("data sets written");
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  static std::string Dir() { return dir_->path(); }
  static int N() { return World()->size(); }

  ParallelOptions Options(SyncMode mode, double bucket_mb = 0.0001) {
    ParallelOptions options;
    options.sync = mode;
    // About 100 bytes: several buckets for this small net.
    options.bucket_mb = bucket_mb;
    return options;
  }

  // Trains on every rank (batch kBatch each) and compares with one process (batch N*kBatch).
  // With `gpu`, both train on it, the ranks communicating through `comm`. `extra`: more
  // solver fields.
  void ExpectEquivalence(const std::string& type, int iter_size, Variant variant, SyncMode mode,
                         std::shared_ptr<Communicator> comm = World(),
                         std::shared_ptr<GpuContext> gpu = nullptr, const std::string& extra = "") {
    const std::string what = type + " iter_size " + std::to_string(iter_size) +
                             (variant == Variant::kShared      ? " shared params"
                              : variant == Variant::kAugmented ? " crop, mirror, dropout"
                              : variant == Variant::kHdf5      ? " shuffled HDF5 files"
                                                               : "") +
                             " --sync=" + SyncModeName(mode) + " on " + std::to_string(N()) +
                             " ranks" + (gpu ? " on GPUs" : "") +
                             (extra.empty() ? "" : " " + extra);
    ParallelOptions options = Options(mode);
    options.gpu = gpu;
    DistributedSolver<float> trainer(
        Param(type, Net(Dir(), kBatch, kBatch, variant), iter_size, 6, extra), comm, options);
    if (N() > 1) {
      EXPECT_GT(trainer.sync().buckets().size(), 2u) << what;
    }
    trainer.Solve();
    EXPECT_EQ(trainer.solver()->iter(), trainer.solver()->param().max_iter());
    auto single = SolverRegistry<float>::CreateSolver(
        Param(type, Net(Dir(), N() * kBatch, kBatch, variant), iter_size, 6, extra), gpu);
    single->Solve();
    ExpectClose(Weights(*trainer.solver()), Weights(*single), what);
    // The weights moved: the comparison means something.
    auto initial =
        SolverRegistry<float>::CreateSolver(Param(type, Net(Dir(), N() * kBatch, kBatch, variant)));
    EXPECT_NE(Weights(*initial), Weights(*single));
  }

  static mpi_test::SharedTempDir* dir_;
};
mpi_test::SharedTempDir* DistributedTest::dir_ = nullptr;

const SyncMode kModes[] = {SyncMode::kOverlap, SyncMode::kReduceBroadcast, SyncMode::kBlocking};

TEST_F(DistributedTest, EquivalenceSgdEveryMode) {
  for (SyncMode mode : kModes) ExpectEquivalence("SGD", 1, Variant::kPlain, mode);
}

TEST_F(DistributedTest, EquivalenceAdamEveryMode) {
  for (SyncMode mode : kModes) ExpectEquivalence("Adam", 1, Variant::kPlain, mode);
}

// LARC's trust ratios come from the allreduced gradients: every rank applies one process's.
TEST_F(DistributedTest, EquivalenceLarcSgdAndNesterov) {
  for (SyncMode mode : {SyncMode::kOverlap, SyncMode::kReduceBroadcast}) {
    ExpectEquivalence("SGD", 1, Variant::kPlain, mode, World(), nullptr,
                      "larc: true larc_policy: 'scale' larc_eta: 0.5 larc_include_bias_bn: true");
    ExpectEquivalence("Nesterov", 2, Variant::kPlain, mode, World(), nullptr,
                      "larc: true larc_policy: 'clip' larc_eta: 0.01");
  }
}

// Every rank decides on the loss scale from the same summed gradients: a power-of-two scale
// (doubled every 2 clean updates here) changes nothing, on any number of ranks.
TEST_F(DistributedTest, EquivalenceUnderDynamicLossScaling) {
  for (SyncMode mode : {SyncMode::kOverlap, SyncMode::kBlocking}) {
    ExpectEquivalence("SGD", 1, Variant::kPlain, mode, World(), nullptr,
                      "loss_scaling: DYNAMIC_LOSS_SCALING loss_scale: 1024 loss_scale_window: 2");
  }
}

// In bf16 (the oneDNN InnerProduct here; the 3-channel convolution stays on CAFFE, and so the
// ReLU and pooling after it stay fp32) a sample's arithmetic does not depend on the batch it
// is in, so N ranks still train what one process trains, to fp32's tolerance.
TEST_F(DistributedTest, EquivalenceInBf16) {
#ifdef DOPPIO_WITH_ONEDNN
  if (!OnednnBf16Missing().empty()) GTEST_SKIP() << "this CPU " << OnednnBf16Missing();
  auto solver = SolverRegistry<float>::CreateSolver(
      Param("SGD", Net(Dir(), kBatch, kBatch), 1, 6, "precision: BF16"));
  ASSERT_EQ(solver->net()->layer_by_name("ip1")->precision().math, BF16);
  for (SyncMode mode : {SyncMode::kOverlap, SyncMode::kBlocking}) {
    ExpectEquivalence("SGD", 1, Variant::kPlain, mode, World(), nullptr, "precision: BF16");
  }
#else
  GTEST_SKIP() << "bf16 on the CPU runs on oneDNN, which this build lacks";
#endif
}

TEST_F(DistributedTest, EquivalenceIterSize2EveryMode) {
  for (SyncMode mode : kModes) {
    ExpectEquivalence("SGD", 2, Variant::kPlain, mode);
    ExpectEquivalence("Adam", 2, Variant::kPlain, mode);
  }
}

TEST_F(DistributedTest, EquivalenceSharedParametersEveryMode) {
  for (SyncMode mode : kModes) ExpectEquivalence("SGD", 1, Variant::kShared, mode);
}

// Crops, mirrors and dropout masks belong to the sample, not to the rank that reads it.
TEST_F(DistributedTest, EquivalenceWithRandomCropMirrorAndDropout) {
  ExpectEquivalence("SGD", 1, Variant::kAugmented, SyncMode::kOverlap);
  ExpectEquivalence("SGD", 2, Variant::kAugmented, SyncMode::kBlocking);
}

// HDF5Data shards its files' rows like the Data layer's records, and shuffles them by epoch,
// not by rank (61 rows: 25 iterations cross an epoch boundary on any number of ranks).
TEST_F(DistributedTest, EquivalenceReadingShuffledHdf5Files) {
  ExpectEquivalence("SGD", 1, Variant::kHdf5, SyncMode::kOverlap, World(), nullptr, "max_iter: 25");
}

// --- On GPUs: the same invariant with the gradients in device memory. ---

// A GPU of the job's: TF32 off, so that float32 sums agree to the tolerance of ExpectClose.
std::shared_ptr<GpuContext> RankGpu(int device) {
  GpuOptions options;
  options.tf32_conv = false;
  options.tf32_gemm = false;
  return GpuContext::Create(device, options);
}

TEST_F(DistributedTest, GpuEquivalenceRanksSharingOneGpuStagedThroughMpi) {
  if (GpuDeviceCount() == 0) GTEST_SKIP() << "no CUDA device (" << GpuUnavailableReason() << ")";
  // Every rank on GPU 0: NCCL cannot serve ranks that share a device, so the buckets go
  // through pinned host memory, in chunks small enough that a bucket takes several.
  auto gpu = RankGpu(0);
  std::shared_ptr<Communicator> comm = MakeGpuCommunicator(World(), gpu, GpuCommRequest::kAuto, 64);
  if (N() > 1) {
    EXPECT_NE(std::dynamic_pointer_cast<StagingCommunicator>(comm), nullptr) << comm->description();
  }
  for (SyncMode mode : kModes) ExpectEquivalence("SGD", 1, Variant::kPlain, mode, comm, gpu);
  ExpectEquivalence("Adam", 2, Variant::kShared, SyncMode::kOverlap, comm, gpu);
  // The GPU's dropout masks are the CPU's, so the ranks agree with one process here too.
  ExpectEquivalence("SGD", 1, Variant::kAugmented, SyncMode::kOverlap, comm, gpu);
  // In 16 bits a sample's arithmetic is its own too (every product sums over one sample's
  // values, rounded once): the ranks still train what one process trains.
  for (const char* precision : {"precision: BF16", "precision: FP16"}) {
    ExpectEquivalence("SGD", 1, Variant::kPlain, SyncMode::kOverlap, comm, gpu, precision);
  }
}

TEST_F(DistributedTest, GpuEquivalenceWithNcclWhenEveryRankHasItsOwnGpu) {
  if (!kBuiltWithNccl) GTEST_SKIP() << "this build has no NCCL";
  if (N() == 1) GTEST_SKIP() << "one rank communicates nothing";
  const int devices = GpuDeviceCount();
  if (devices < World()->local_size()) {
    GTEST_SKIP() << "NCCL needs a GPU per rank: " << World()->local_size()
                 << " ranks on this node, " << devices << " CUDA device(s)";
  }
  auto gpu = RankGpu(World()->local_rank());
  {
    std::shared_ptr<Communicator> comm = MakeGpuCommunicator(World(), gpu);
    EXPECT_NE(comm->description().find("NCCL"), std::string::npos) << comm->description();
    for (SyncMode mode : kModes) ExpectEquivalence("SGD", 1, Variant::kPlain, mode, comm, gpu);
    ExpectEquivalence("Adam", 2, Variant::kShared, SyncMode::kOverlap, comm, gpu);
  }
}

TEST_F(DistributedTest, IterSizeReducesOncePerUpdate) {
  for (SyncMode mode : kModes) {
    auto counting = std::make_shared<CountingCommunicator>(World());
    DistributedSolver<float> trainer(Param("SGD", Net(Dir(), kBatch, kBatch), 2, 3), counting,
                                     Options(mode));
    const int buckets = static_cast<int>(trainer.sync().buckets().size());
    counting->labels.clear();
    trainer.Solve();
    if (N() == 1) {
      EXPECT_EQ(counting->count("allreduce"), 0);
      continue;
    }
    if (mode == SyncMode::kOverlap) {
      EXPECT_EQ(counting->count("allreduce bucket"), 3 * buckets);
    } else if (mode == SyncMode::kReduceBroadcast) {
      EXPECT_EQ(counting->count("reduce bucket"), 3 * buckets);
      EXPECT_EQ(counting->count("broadcast weights"), 3);
    } else {
      EXPECT_EQ(counting->count("allreduce all gradients"), 3);
    }
  }
}

TEST_F(DistributedTest, BucketsLaunchWhileBackwardGoesOn) {
  if (N() == 1) GTEST_SKIP() << "one rank communicates nothing";
  auto counting = std::make_shared<CountingCommunicator>(World());
  DistributedSolver<float> trainer(Param("SGD", Net(Dir(), kBatch, kBatch), 1, 2), counting,
                                   Options(SyncMode::kOverlap));
  auto net = trainer.solver()->net();
  int conv1 = -1;
  for (std::size_t i = 0; i < net->layer_names().size(); ++i) {
    if (net->layer_names()[i] == "conv1") conv1 = static_cast<int>(i);
  }
  ASSERT_GE(conv1, 0);
  // When conv1's backward starts (just after the layer above it finished), the buckets of
  // the layers above are already on their way.
  std::vector<int> launched_before_conv1;
  net->add_after_backward([&](int layer) {
    if (layer == conv1 + 1) launched_before_conv1.push_back(counting->count("allreduce bucket"));
  });
  counting->labels.clear();
  trainer.Solve();
  ASSERT_EQ(launched_before_conv1.size(), 2u);
  const int buckets = static_cast<int>(trainer.sync().buckets().size());
  EXPECT_GE(launched_before_conv1[0], 1);
  EXPECT_LT(launched_before_conv1[0], buckets);
  EXPECT_EQ(counting->count("allreduce bucket"), 2 * buckets);
}

// random_seed -1 (a fresh seed each run, as in Caffe): every rank takes rank 0's, so that
// the per-sample crops, mirrors and masks agree and the ranks train one net.
TEST_F(DistributedTest, AFreshSeedIsRank0sOnEveryRank) {
  SolverParameter param = Param("SGD", Net(Dir(), kBatch, kBatch, Variant::kAugmented));
  param.set_random_seed(-1);
  DistributedSolver<float> trainer(param, World(), Options(SyncMode::kOverlap));
  const std::int64_t seed = trainer.solver()->param().random_seed();
  if (N() > 1) EXPECT_GE(seed, 0);
  for (std::int64_t other : World()->AllgatherValue(seed)) EXPECT_EQ(other, seed);
  trainer.Solve();
  const std::vector<std::uint64_t> sums = World()->AllgatherValue(trainer.WeightsChecksum());
  for (std::uint64_t sum : sums) EXPECT_EQ(sum, sums[0]);
}

TEST_F(DistributedTest, RanksOnDifferentDevicesAgree) {
  // `train --gpu=all` gives each rank of a node its own device_id.
  SolverParameter param = Param("SGD", Net(Dir(), kBatch, kBatch));
  param.set_device_id(World()->rank());
  DistributedSolver<float> trainer(param, World(), Options(SyncMode::kOverlap));
  trainer.Solve();
  EXPECT_EQ(trainer.solver()->iter(), 6);
}

TEST_F(DistributedTest, TestPhaseScoresEqualTheSingleProcessScores) {
  // 5 test batches of 3: with 2 ranks 3 + 2 of them, with 4 ranks 2 + 1 + 1 + 1.
  for (int test_iter : {5, 8}) {
    const std::string extra =
        "test_iter: " + std::to_string(test_iter) + " test_interval: 100 test_compute_loss: true";
    DistributedSolver<float> trainer(Param("SGD", Net(Dir(), kBatch, kBatch), 1, 6, extra), World(),
                                     Options(SyncMode::kOverlap));
    auto single = SolverRegistry<float>::CreateSolver(
        Param("SGD", Net(Dir(), N() * kBatch, kBatch), 1, 6, extra));
    trainer.solver()->TestAll();
    single->TestAll();
    const auto& scores = trainer.solver()->last_test_scores();
    const auto& expected = single->last_test_scores();
    ASSERT_EQ(scores.size(), 2u);
    ASSERT_EQ(expected.size(), 2u);
    // accuracy, loss
    EXPECT_NEAR(scores[0], expected[0], 1e-6) << test_iter << " test batches";
    EXPECT_NEAR(scores[1], expected[1], 1e-5 * std::fabs(expected[1])) << test_iter;
    // And again after some training, every rank holding the same trained weights. (When
    // the ranks' shares differ, those with one batch fewer skip one so that every rank
    // starts the next test at the same place: then the test covers the same number of
    // consecutive batches, but not the ones a single process reads next.)
    if (test_iter % N() != 0) continue;
    trainer.Solve();
    single->Solve();
    trainer.solver()->TestAll();
    single->TestAll();
    EXPECT_NEAR(trainer.solver()->last_test_scores()[0], single->last_test_scores()[0], 1e-6);
    EXPECT_NEAR(trainer.solver()->last_test_scores()[1], single->last_test_scores()[1],
                2e-4 * std::fabs(single->last_test_scores()[1]));
  }
}

// Exact resume with random crops, mirrors and dropout, across an epoch boundary: the state
// carries the data position, so N ranks resumed from their own snapshot end bit for bit where
// the uninterrupted N ranks end, one process likewise, and a snapshot of N ranks resumes on 1
// process (and 1 on N) as closely as N ranks ever match 1 process.
TEST_F(DistributedTest, ResumeExactlyOnTheSameOrAnotherNumberOfRanks) {
  constexpr int kSnapshotAt = 7, kTotal = 12;
  const std::string prefix = Dir() + "/resume_" + std::to_string(N());
  const std::string rank = std::to_string(World()->rank());
  auto dist_param = [&](int max_iter, const std::string& extra) {
    return Param("SGD", Net(Dir(), kBatch, kBatch, Variant::kAugmented), 1, max_iter, extra);
  };
  auto single_param = [&](int max_iter, const std::string& extra) {
    return Param("SGD", Net(Dir(), N() * kBatch, kBatch, Variant::kAugmented), 1, max_iter, extra);
  };
  const std::string at = std::to_string(kSnapshotAt);
  // The interrupted runs: N ranks (rank 0 writes) and one process per rank.
  {
    DistributedSolver<float> trainer(
        dist_param(kSnapshotAt, "snapshot: " + at + " snapshot_prefix: '" + prefix + "_dist'"),
        World(), Options(SyncMode::kOverlap));
    if (World()->rank() > 0) EXPECT_EQ(trainer.rank_param().snapshot(), 0);
    trainer.Solve();
  }
  World()->Barrier();
  SolverRegistry<float>::CreateSolver(
      single_param(kSnapshotAt,
                   "snapshot: " + at + " snapshot_prefix: '" + prefix + "_single_" + rank + "'"))
      ->Solve();
  const std::string dist_state = prefix + "_dist_iter_" + at + ".solverstate";
  const std::string single_state = prefix + "_single_" + rank + "_iter_" + at + ".solverstate";

  // The uninterrupted runs.
  DistributedSolver<float> dist(dist_param(kTotal, ""), World(), Options(SyncMode::kOverlap));
  dist.Solve();
  auto single = SolverRegistry<float>::CreateSolver(single_param(kTotal, ""));
  single->Solve();

  // Same number of ranks: bit for bit.
  DistributedSolver<float> dist_resumed(dist_param(kTotal, ""), World(),
                                        Options(SyncMode::kOverlap));
  dist_resumed.Solve(dist_state);
  EXPECT_EQ(dist_resumed.solver()->iter(), kTotal);
  EXPECT_EQ(Weights(*dist_resumed.solver()), Weights(*dist.solver())) << N() << " -> " << N();
  auto single_resumed = SolverRegistry<float>::CreateSolver(single_param(kTotal, ""));
  single_resumed->Solve(single_state);
  EXPECT_EQ(Weights(*single_resumed), Weights(*single)) << "1 -> 1";

  // Another number of ranks: the same records, crops and masks; sums in another order.
  auto from_ranks = SolverRegistry<float>::CreateSolver(single_param(kTotal, ""));
  from_ranks->Solve(dist_state);
  ExpectClose(Weights(*from_ranks), Weights(*single), std::to_string(N()) + " ranks -> 1");
  DistributedSolver<float> from_single(dist_param(kTotal, ""), World(),
                                       Options(SyncMode::kOverlap));
  from_single.Solve(prefix + "_single_0_iter_" + at + ".solverstate");
  ExpectClose(Weights(*from_single.solver()), Weights(*single),
              "1 -> " + std::to_string(N()) + " ranks");
}

TEST_F(DistributedTest, AStopRequestOnOneRankStopsEveryRankAtTheSameIteration) {
  SolverParameter param = Param("SGD", Net(Dir(), kBatch, kBatch), 1, 20,
                                "snapshot_after_train: true snapshot_prefix: '" + Dir() + "/stop'");
  DistributedSolver<float> trainer(param, World(), Options(SyncMode::kOverlap));
  const int last = N() - 1;
  int polls = 0;
  trainer.SetActionFunction([&] {
    ++polls;
    if (World()->rank() != last) return SolverAction::NONE;
    if (polls == 2) return SolverAction::SNAPSHOT;
    return polls == 4 ? SolverAction::STOP : SolverAction::NONE;
  });
  trainer.Solve();
  EXPECT_EQ(trainer.solver()->iter(), 4);
  EXPECT_TRUE(trainer.solver()->requested_early_exit());
  World()->Barrier();
  // Rank 0 wrote the requested snapshot and the one after training.
  EXPECT_TRUE(fs::exists(Dir() + "/stop_iter_2.caffemodel"));
  EXPECT_TRUE(fs::exists(Dir() + "/stop_iter_4.solverstate"));
}

// A stop and a snapshot asked for on different ranks, or at different polls, both happen:
// every rank stops, and rank 0 snapshots first. By enum number a SNAPSHOT (2) beat a STOP
// (1), so a Ctrl-C polled between test batches was lost to a later snapshot request.
TEST_F(DistributedTest, AStopMeetingASnapshotStopsEveryRankAfterRankZeroSnapshots) {
  const int rank = World()->rank();
  const int last = N() - 1;
  for (const bool stop_first : {true, false}) {
    SCOPED_TRACE(stop_first ? "the stop polled between test batches" : "the snapshot first");
    ActionAgreement agreement;
    const SolverAction early = stop_first ? SolverAction::STOP : SolverAction::SNAPSHOT;
    const SolverAction late = stop_first ? SolverAction::SNAPSHOT : SolverAction::STOP;
    // Between test batches: kept for the end of the iteration on every rank.
    EXPECT_EQ(agreement.Agree(*World(), rank == last ? early : SolverAction::NONE),
              SolverAction::NONE);
    agreement.EndIteration();
    const SolverAction agreed = agreement.Agree(*World(), rank == 0 ? late : SolverAction::NONE);
    EXPECT_EQ(agreed, rank == 0 ? SolverAction::SNAPSHOT_AND_STOP : SolverAction::STOP);
    EXPECT_TRUE(agreement.snapshot_agreed());
    // Nothing is left over for the next iteration.
    agreement.EndIteration();
    EXPECT_EQ(agreement.Agree(*World(), SolverAction::NONE), SolverAction::NONE);
    EXPECT_FALSE(agreement.snapshot_agreed());
  }
}

TEST_F(DistributedTest, ASnapshotAndAStopTogetherWriteTheSnapshotWithoutSnapshotAfterTrain) {
  SolverParameter param =
      Param("SGD", Net(Dir(), kBatch, kBatch), 1, 20, "snapshot_prefix: '" + Dir() + "/both'");
  DistributedSolver<float> trainer(param, World(), Options(SyncMode::kOverlap));
  const int rank = World()->rank();
  int polls = 0;
  trainer.SetActionFunction([&] {
    if (++polls != 3) return SolverAction::NONE;
    return CombineActions(rank == 0 ? SolverAction::SNAPSHOT : SolverAction::NONE,
                          rank == N() - 1 ? SolverAction::STOP : SolverAction::NONE);
  });
  trainer.Solve();
  EXPECT_EQ(trainer.solver()->iter(), 3);
  EXPECT_TRUE(trainer.solver()->requested_early_exit());
  World()->Barrier();
  EXPECT_TRUE(fs::exists(Dir() + "/both_iter_3.caffemodel"));
  EXPECT_TRUE(fs::exists(Dir() + "/both_iter_3.solverstate"));
}

TEST_F(DistributedTest, TimelineHasEveryRankLayersAndCommunication) {
  ParallelOptions options = Options(SyncMode::kOverlap);
  options.timeline_file = Dir() + "/timeline.json";
  {
    DistributedSolver<float> trainer(
        Param("SGD", Net(Dir(), kBatch, kBatch), 1, 3, "test_iter: 4 test_interval: 2"), World(),
        options);
    trainer.Solve();
  }
  World()->Barrier();
  std::ifstream in(options.timeline_file);
  const std::string json((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_FALSE(json.empty());
  EXPECT_EQ(json.rfind("{\"displayTimeUnit\"", 0), 0u);
  for (int r = 0; r < N(); ++r) {
    EXPECT_NE(json.find("\"args\":{\"name\":\"rank " + std::to_string(r) + "\"}"),
              std::string::npos);
  }
  for (const char* part : {"\"forward conv1\"", "\"backward conv1\"", "\"data wait\"", "\"update\"",
                           "\"test #0 ip2\""}) {
    EXPECT_NE(json.find(part), std::string::npos) << part;
  }
  if (N() > 1) {
    EXPECT_NE(json.find("\"allreduce bucket 0"), std::string::npos);
    EXPECT_NE(json.find("\"wait for gradients\""), std::string::npos);
  }
}

TEST_F(DistributedTest, TotalsAccountForComputeAndCommunication) {
  DistributedSolver<float> trainer(Param("SGD", Net(Dir(), kBatch, kBatch), 1, 4), World(),
                                   Options(SyncMode::kOverlap));
  trainer.Solve();
  const ParallelTotals& totals = trainer.totals();
  EXPECT_EQ(totals.iterations, 4);
  EXPECT_GT(totals.compute, 0);
  EXPECT_GE(totals.iteration, totals.compute);
  EXPECT_LE(totals.hidden, totals.comm + 1e-9);
  if (N() == 1) {
    EXPECT_EQ(totals.comm, 0);
    EXPECT_EQ(totals.wait, 0);
  } else {
    EXPECT_GT(totals.comm, 0);
  }
  EXPECT_EQ(trainer.batch_per_rank(), kBatch);
}

// --- Bad input: refused on every rank, naming the rank, never a hang. ---

#define EXPECT_AGREED_ERROR(statement, ...) EXPECT_THROW_WITH(statement, AgreedError, __VA_ARGS__)

TEST_F(DistributedTest, MismatchedNetsAreRefusedNamingTheRank) {
  if (N() == 1) GTEST_SKIP();
  const int last = N() - 1;
  const int hidden = World()->rank() == last ? 11 : 12;
  EXPECT_AGREED_ERROR(
      DistributedSolver<float>(Param("SGD", Net(Dir(), kBatch, kBatch, Variant::kPlain, hidden)),
                               World(), Options(SyncMode::kOverlap)),
      "rank " + std::to_string(last) + " has different nets", "refusing to train");
}

TEST_F(DistributedTest, MismatchedBucketsAndSolverSettingsAreRefused) {
  if (N() == 1) GTEST_SKIP();
  const bool odd = World()->rank() % 2 == 1;
  const std::string odd_ranks = N() > 3 ? "ranks 1, 3 have" : "rank 1 has";
  EXPECT_AGREED_ERROR(DistributedSolver<float>(Param("SGD", Net(Dir(), kBatch, kBatch)), World(),
                                               Options(SyncMode::kOverlap, odd ? 0.001 : 0.0001)),
                      odd_ranks + " different gradient bucket layout");
  EXPECT_AGREED_ERROR(
      DistributedSolver<float>(Param("SGD", Net(Dir(), kBatch, kBatch)), World(),
                               Options(odd ? SyncMode::kBlocking : SyncMode::kOverlap)),
      "different gradient bucket layout");
  SolverParameter param = Param("SGD", Net(Dir(), kBatch, kBatch));
  if (odd) param.set_max_iter(7);
  EXPECT_AGREED_ERROR(DistributedSolver<float>(param, World(), Options(SyncMode::kOverlap)),
                      odd_ranks + " different solver settings");
  // Per-sample random draws key on the seed: the ranks must share it.
  param = Param("SGD", Net(Dir(), kBatch, kBatch));
  if (odd) param.set_random_seed(6);
  EXPECT_AGREED_ERROR(DistributedSolver<float>(param, World(), Options(SyncMode::kOverlap)),
                      odd_ranks + " different solver settings");
}

TEST_F(DistributedTest, ARankThatCannotBuildItsSolverStopsEveryRank) {
  const int last = N() - 1;
  SolverParameter param = Param("SGD", Net(Dir(), kBatch, kBatch));
  if (World()->rank() == last) param.mutable_net_param()->mutable_layer(3)->set_type("NoSuchLayer");
  if (N() == 1) {
    EXPECT_THROW(DistributedSolver<float>(param, World(), Options(SyncMode::kOverlap)), Error);
    return;
  }
  EXPECT_AGREED_ERROR(DistributedSolver<float>(param, World(), Options(SyncMode::kOverlap)),
                      "rank " + std::to_string(last) + " could not set up its solver",
                      "NoSuchLayer");
}

TEST_F(DistributedTest, AnUnreadableSnapshotStopsEveryRank) {
  DistributedSolver<float> trainer(Param("SGD", Net(Dir(), kBatch, kBatch)), World(),
                                   Options(SyncMode::kOverlap));
  EXPECT_AGREED_ERROR(trainer.Solve(Dir() + "/absent.solverstate"), "absent.solverstate");
  EXPECT_EQ(trainer.solver()->iter(), 0);
}

// The last rank puts a NaN of iteration 3 in its images or, with `in_gradient`, in its gradient
// of ip1's weights, which the other ranks see only in the summed gradients.
TEST_F(DistributedTest, ANaNOnOneRankStopsEveryRankWithOneMessageAndNoSnapshotOfIt) {
  const int last = N() - 1;
  for (const bool in_gradient : {false, true}) {
    for (SyncMode mode : {SyncMode::kOverlap, SyncMode::kReduceBroadcast}) {
      SCOPED_TRACE(std::string(SyncModeName(mode)) + (in_gradient ? ", in a gradient" : ""));
      const std::string prefix =
          Dir() + "/nan_" + SyncModeName(mode) + (in_gradient ? "_gradient" : "");
      SolverParameter param = Param("SGD", Net(Dir(), kBatch, kBatch), 1, 20,
                                    "snapshot: 1 snapshot_prefix: '" + prefix + "'");
      DistributedSolver<float> trainer(param, World(), Options(mode));
      Solver<float>* solver = trainer.solver();
      auto* net = solver->net().get();
      const auto& names = net->layer_names();
      const int ip1 =
          static_cast<int>(std::find(names.begin(), names.end(), "ip1") - names.begin());
      net->add_after_forward([=](int id) {
        if (!in_gradient && id == 0 && World()->rank() == last && solver->iter() == 3) {
          net->top_vecs()[0][0]->mutable_cpu_data()[5] = std::nanf("");
        }
      });
      net->add_before_backward([=](int id) {
        if (in_gradient && id == ip1 && World()->rank() == last && solver->iter() == 3) {
          net->layers()[id]->blobs()[0]->mutable_cpu_diff()[5] = std::nanf("");
        }
      });
      std::string message;
      try {
        trainer.Solve();
        ADD_FAILURE() << "training should have diverged";
      } catch (const AgreedError& error) {
        EXPECT_EQ(error.code(), ExitCode::kDiverged);
        message = error.what();
      }
      // A NaN in the images makes the last rank's loss NaN (NaN propagates through every
      // layer): that rank stops before the update in either mode, naming the images. One in a
      // gradient shows only once the gradients are summed: rank 0 (under reduce_bcast the only
      // rank that holds them and updates) stops on the weights the update made, naming the
      // first NaN in the arena's order.
      const int origin_rank = in_gradient ? 0 : last;
      const std::string origin = N() == 1 ? "" : "rank " + std::to_string(origin_rank) + ": ";
      const std::string why =
          in_gradient ? "the update made weights NaN or infinite" : "the loss is nan";
      EXPECT_EQ(message.find(origin + "Iteration 3 (lr = 0.05): training diverged: " + why), 0u)
          << message;
      const std::string where = in_gradient ? "the diff of param #0 of layer 'ip1' (InnerProduct)"
                                            : "top blob 'data' of layer 'data' (Data)";
      EXPECT_NE(message.find(where), std::string::npos) << message;
      std::string rank0_message = message;
      World()->BroadcastBytes(&rank0_message, 0, "test: rank 0's message");
      EXPECT_EQ(message, rank0_message);
      World()->Barrier();
      EXPECT_TRUE(fs::exists(prefix + "_iter_3.caffemodel"));
      EXPECT_FALSE(fs::exists(prefix + "_iter_4.caffemodel"));
      EXPECT_FALSE(fs::exists(prefix + "_iter_4.solverstate"));
    }
  }
}

TEST_F(DistributedTest, BadOptionsAndTooFewTestBatchesAreRefused) {
  EXPECT_AGREED_ERROR(DistributedSolver<float>(Param("SGD", Net(Dir(), kBatch, kBatch)), World(),
                                               Options(SyncMode::kOverlap, 0)),
                      "--bucket_mb");
  if (N() == 1) return;
  EXPECT_AGREED_ERROR(
      DistributedSolver<float>(Param("SGD", Net(Dir(), kBatch, kBatch), 1, 6,
                                     "test_iter: " + std::to_string(N() - 1) + " test_interval: 2"),
                               World(), Options(SyncMode::kOverlap)),
      "test_iter #0", "fewer than the " + std::to_string(N()) + " ranks");
}

TEST_F(DistributedTest, LearningRateScalingAndWarmUpAreExplicit) {
  ParallelOptions options = Options(SyncMode::kOverlap);
  options.scale_lr = true;
  options.lr_warmup_iters = 10;
  DistributedSolver<float> trainer(Param("SGD", Net(Dir(), kBatch, kBatch)), World(), options);
  EXPECT_FLOAT_EQ(trainer.rank_param().base_lr(), 0.05f * N());
  EXPECT_EQ(trainer.rank_param().warmup_iter(), 10);
  EXPECT_FLOAT_EQ(trainer.rank_param().warmup_start_factor(), 1.0f / N());
  DistributedSolver<float> plain(Param("SGD", Net(Dir(), kBatch, kBatch)), World(),
                                 Options(SyncMode::kOverlap));
  EXPECT_FLOAT_EQ(plain.rank_param().base_lr(), 0.05f);
}

// The global batch here is N ranks x kBatch x iter_size 2; the reference, the per-rank batch
// kBatch unless reference_batch says otherwise.
TEST_F(DistributedTest, LrScalingFollowsTheGlobalBatch) {
  ParallelOptions options = Options(SyncMode::kOverlap);
  options.lr_scaling = LrScaling::kLinear;
  options.lr_warmup_iters = 5;
  DistributedSolver<float> linear(Param("SGD", Net(Dir(), kBatch, kBatch), 2), World(), options);
  EXPECT_FLOAT_EQ(linear.rank_param().base_lr(), 0.05f * 2 * N());
  EXPECT_FLOAT_EQ(linear.rank_param().warmup_start_factor(), 1.0f / (2 * N()));
  options.lr_scaling = LrScaling::kSqrt;
  options.lr_warmup_iters = 0;
  DistributedSolver<float> sqrt_rule(
      Param("SGD", Net(Dir(), kBatch, kBatch), 2, 6, "reference_batch: 1"), World(), options);
  EXPECT_FLOAT_EQ(sqrt_rule.rank_param().base_lr(), 0.05f * std::sqrt(2.0f * N() * kBatch));
  EXPECT_FLOAT_EQ(sqrt_rule.solver()->param().base_lr(), sqrt_rule.rank_param().base_lr());
  options.scale_lr = true;
  EXPECT_AGREED_ERROR(
      DistributedSolver<float>(Param("SGD", Net(Dir(), kBatch, kBatch)), World(), options),
      "--lr_scaling=sqrt", "--scale_lr");
}

}  // namespace
}  // namespace doppio
