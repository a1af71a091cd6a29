// The MPI communicator on 2, 3 ranks (and over TCP): every collective, blocking and not,
// on host buffers, and on "device" buffers staged in chunks through pinned memory by a
// StagingCommunicator over it.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <string>
#include <thread>

#include "doppio/core/common.hpp"
#include "doppio/parallel/mpi_communicator.hpp"
#include "fake_device.hpp"
#include "mpi_test_util.hpp"

namespace doppio {
namespace {

using mpi_test::World;
using test::FakeDevice;
using test::GatedDevice;

TEST(MpiCommunicatorTest, RanksAndNode) {
  auto comm = World();
  EXPECT_GE(comm->size(), 1);
  EXPECT_GE(comm->rank(), 0);
  EXPECT_LT(comm->rank(), comm->size());
  // mpiexec starts every rank on this machine.
  EXPECT_EQ(comm->local_size(), comm->size());
  EXPECT_EQ(comm->local_rank(), comm->rank());
  EXPECT_NE(comm->description().find("MPI"), std::string::npos);
  const std::vector<std::int32_t> ranks = comm->AllgatherValue<std::int32_t>(comm->rank());
  for (int r = 0; r < comm->size(); ++r) EXPECT_EQ(ranks[r], r);
}

TEST(MpiCommunicatorTest, AllreduceSumMaxMinEveryType) {
  auto comm = World();
  const int n = comm->size();
  const int r = comm->rank();
  std::vector<float> f = {1.5f * r, 2.0f, -1.0f * r};
  comm->Allreduce(f.data(), f.size(), CommType::kFloat, ReduceOp::kSum);
  EXPECT_FLOAT_EQ(f[0], 1.5f * n * (n - 1) / 2);
  EXPECT_FLOAT_EQ(f[1], 2.0f * n);
  std::vector<double> d = {double(r), -double(r)};
  comm->Allreduce(d.data(), 2, CommType::kDouble, ReduceOp::kMax);
  EXPECT_EQ(d[0], n - 1);
  EXPECT_EQ(d[1], 0);
  std::int64_t i = 10 + r;
  comm->Allreduce(&i, 1, CommType::kInt64, ReduceOp::kMin);
  EXPECT_EQ(i, 10);
  std::uint64_t u = 1ull << 40;
  comm->Allreduce(&u, 1, CommType::kUInt64, ReduceOp::kSum);
  EXPECT_EQ(u, (1ull << 40) * n);
  std::int32_t empty = 0;
  comm->Allreduce(&empty, 0, CommType::kInt32, ReduceOp::kSum);
}

TEST(MpiCommunicatorTest, NonBlockingOperationsCompleteInAnyWaitOrder) {
  auto comm = World();
  const int n = comm->size();
  std::vector<std::vector<float>> buffers(6, std::vector<float>(1000));
  std::vector<CommHandle> handles;
  for (int b = 0; b < 6; ++b) {
    std::fill(buffers[b].begin(), buffers[b].end(), float(b + comm->rank()));
    handles.push_back(comm->IAllreduce(buffers[b].data(), buffers[b].size(), CommType::kFloat,
                                       ReduceOp::kSum, MemoryKind::kHost,
                                       "bucket " + std::to_string(b)));
  }
  for (int b = 5; b >= 0; --b) {
    handles[b]->Wait();
    EXPECT_TRUE(handles[b]->Test());
    EXPECT_LE(handles[b]->start_time(), handles[b]->end_time());
    EXPECT_EQ(handles[b]->label(), "bucket " + std::to_string(b));
    EXPECT_EQ(handles[b]->bytes(), 4000u);
    const float expected = float(b) * n + float(n * (n - 1) / 2);
    for (float value : buffers[b]) ASSERT_EQ(value, expected);
  }
}

TEST(MpiCommunicatorTest, BroadcastReduceAllgatherBarrierFromEveryRoot) {
  auto comm = World();
  const int n = comm->size();
  for (int root = 0; root < n; ++root) {
    std::vector<double> values(17, comm->rank() == root ? 3.25 + root : -1.0);
    comm->Broadcast(values.data(), values.size(), CommType::kDouble, root);
    for (double value : values) EXPECT_EQ(value, 3.25 + root);

    std::vector<std::int32_t> counts(5, comm->rank() + 1);
    comm->Reduce(counts.data(), counts.size(), CommType::kInt32, ReduceOp::kSum, root);
    if (comm->rank() == root) {
      for (std::int32_t value : counts) EXPECT_EQ(value, n * (n + 1) / 2);
    } else {
      // Other ranks' buffers are only read.
      for (std::int32_t value : counts) EXPECT_EQ(value, comm->rank() + 1);
    }
    comm->Barrier();
  }
  float mine[2] = {float(comm->rank()), float(-comm->rank())};
  std::vector<float> all(2 * n);
  comm->Allgather(mine, all.data(), 2, CommType::kFloat);
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(all[2 * r], r);
    EXPECT_EQ(all[2 * r + 1], -r);
  }
  EXPECT_THROW(comm->Broadcast(mine, 2, CommType::kFloat, n), Error);
  EXPECT_THROW(comm->Reduce(mine, 2, CommType::kFloat, ReduceOp::kSum, -1), Error);
}

TEST(MpiCommunicatorTest, BytesOfDifferentLengths) {
  auto comm = World();
  std::string text = comm->rank() == 0 ? std::string("from rank 0\0with a zero", 23) : "x";
  comm->BroadcastBytes(&text, 0);
  EXPECT_EQ(text, std::string("from rank 0\0with a zero", 23));
  std::string empty = comm->rank() == 0 ? "" : "ignored";
  comm->BroadcastBytes(&empty, 0);
  EXPECT_EQ(empty, "");
  // Rank r sends r copies of its digit (rank 0 nothing).
  const std::string mine(comm->rank(), static_cast<char>('0' + comm->rank() % 10));
  for (int root = 0; root < comm->size(); ++root) {
    const std::vector<std::string> parts = comm->GatherBytes(mine, root);
    if (comm->rank() == root) {
      ASSERT_EQ(static_cast<int>(parts.size()), comm->size());
      for (int r = 0; r < comm->size(); ++r) {
        EXPECT_EQ(parts[r], std::string(r, static_cast<char>('0' + r % 10)));
      }
    } else {
      EXPECT_TRUE(parts.empty());
    }
  }
}

TEST(MpiCommunicatorTest, LargeAllreduceIsExact) {
  auto comm = World();
  // 24 MB: the large-message protocols of the transport.
  std::vector<float> big(6 << 20);
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = float(i % 1000) + comm->rank();
  comm->Allreduce(big.data(), big.size(), CommType::kFloat, ReduceOp::kSum);
  const int n = comm->size();
  for (std::size_t i = 0; i < big.size(); i += 997) {
    ASSERT_EQ(big[i], float(i % 1000) * n + float(n * (n - 1) / 2)) << i;
  }
}

TEST(MpiCommunicatorTest, PiecedRingAllreduceGivesEveryRankTheSameBits) {
  auto comm = World();
  // MpiEngine picks libnbc's ring unless the launcher set the algorithm.
  if (std::getenv("OMPI_MCA_coll_libnbc_iallreduce_algorithm") == nullptr ||
      std::string(std::getenv("OMPI_MCA_coll_libnbc_iallreduce_algorithm")) == "1") {
    EXPECT_NE(comm->description().find("allreduce ring"), std::string::npos) << comm->description();
  }
  // Two whole pieces and a short one, of values whose sum rounds: the ring sums each segment
  // in its own order, and every rank must still end with the same bits, close to the sum.
  const std::size_t count = 2 * kMpiAllreducePieceBytes / sizeof(float) + 3;
  std::vector<float> values(count);
  const auto value = [](std::size_t i, int rank) {
    return 1.0f / float(1 + (i * 7919 + rank * 104729) % 9973);
  };
  for (std::size_t i = 0; i < count; ++i) values[i] = value(i, comm->rank());
  comm->Allreduce(values.data(), count, CommType::kFloat, ReduceOp::kSum);
  std::uint64_t hash = 1469598103934665603ull;
  for (float v : values) {
    std::uint32_t bits;
    std::memcpy(&bits, &v, sizeof(bits));
    hash = (hash ^ bits) * 1099511628211ull;
  }
  const std::vector<std::uint64_t> hashes = comm->AllgatherValue<std::uint64_t>(hash);
  for (int r = 0; r < comm->size(); ++r) EXPECT_EQ(hashes[r], hashes[0]) << "rank " << r;
  for (std::size_t i = 0; i < count; i += count / 101) {
    double expected = 0;
    for (int r = 0; r < comm->size(); ++r) expected += value(i, r);
    ASSERT_NEAR(values[i], expected, 1e-6 * expected) << i;
  }
}

TEST(MpiCommunicatorTest, DeviceBuffersAreStagedInChunks) {
  const int n = World()->size();
  const int r = World()->rank();
  EXPECT_THROW(World()->IAllreduce(nullptr, 4, CommType::kFloat, ReduceOp::kSum,
                                   MemoryKind::kDevice, "no device support"),
               Error);
  auto device = std::make_shared<FakeDevice>();
  // 1000-byte chunks: 250 floats.
  auto comm = std::make_unique<StagingCommunicator>(World(), device, 1000);
  std::vector<float> gradients(2600);
  for (std::size_t i = 0; i < gradients.size(); ++i) gradients[i] = float(i) + r;
  comm->Allreduce(gradients.data(), gradients.size(), CommType::kFloat, ReduceOp::kSum,
                  "staged allreduce", MemoryKind::kDevice);
  for (std::size_t i = 0; i < gradients.size(); ++i) {
    ASSERT_EQ(gradients[i], float(i) * n + float(n * (n - 1) / 2)) << i;
  }
  // 11 chunks, each copied in and out; only two pinned buffers ever exist.
  EXPECT_EQ(device->to_host, 11);
  EXPECT_EQ(device->to_device, 11);
  EXPECT_EQ(device->allocations, 2);

  std::vector<double> weights(300, r == 1 % n ? 2.5 : 0.0);
  comm->Broadcast(weights.data(), weights.size(), CommType::kDouble, 1 % n, "staged broadcast",
                  MemoryKind::kDevice);
  for (double value : weights) ASSERT_EQ(value, 2.5);
  std::vector<std::int32_t> counts(700, r + 1);
  comm->Reduce(counts.data(), counts.size(), CommType::kInt32, ReduceOp::kSum, 0, "staged reduce",
               MemoryKind::kDevice);
  for (std::int32_t value : counts) ASSERT_EQ(value, r == 0 ? n * (n + 1) / 2 : r + 1);
  // Non-blocking staged operations queue behind each other in order.
  std::vector<float> a(1000, 1.0f), b(10, 2.0f);
  auto first = comm->IAllreduce(a.data(), a.size(), CommType::kFloat, ReduceOp::kSum,
                                MemoryKind::kDevice, "a");
  auto second = comm->IAllreduce(b.data(), b.size(), CommType::kFloat, ReduceOp::kSum,
                                 MemoryKind::kHost, "b");
  second->Wait();
  first->Wait();
  EXPECT_EQ(a[999], float(n));
  EXPECT_EQ(b[0], 2.0f * n);
  comm.reset();
  EXPECT_EQ(device->frees, device->allocations);
}

TEST(MpiCommunicatorTest, StagedCopiesWaitForTheDeviceFence) {
  const int n = World()->size();
  auto device = std::make_shared<GatedDevice>();
  auto comm = std::make_unique<StagingCommunicator>(World(), device, 1000);
  std::vector<float> gradients(600, 1.0f);
  auto staged = comm->IAllreduce(gradients.data(), gradients.size(), CommType::kFloat,
                                 ReduceOp::kSum, MemoryKind::kDevice, "gated");
  // A host collective issued behind it waits too: operations start in issue order.
  std::int32_t after = 1;
  auto host = comm->IAllreduce(&after, 1, CommType::kInt32, ReduceOp::kSum, MemoryKind::kHost,
                               "behind the gated one");
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(staged->Test());
  EXPECT_EQ(device->to_host, 0);
  // What the "kernels" wrote before the fence opened is what gets reduced.
  std::fill(gradients.begin(), gradients.end(), 2.0f);
  device->open = true;
  staged->Wait();
  host->Wait();
  for (float value : gradients) ASSERT_EQ(value, 2.0f * n);
  EXPECT_EQ(after, n);
}

TEST(MpiCommunicatorTest, ConcurrentIssueFromTwoThreadsInAgreedOrder) {
  // The communication thread serialises MPI: a second thread may issue and wait too, as
  // long as every rank issues in the same order (here: one after the other, by a latch).
  auto comm = World();
  std::vector<float> x(64, 1.0f);
  std::thread helper([&] {
    comm->Allreduce(x.data(), x.size(), CommType::kFloat, ReduceOp::kSum, "from a thread");
  });
  helper.join();
  comm->Barrier();
  EXPECT_EQ(x[0], float(comm->size()));
}

TEST(MpiCommunicatorTest, TimeoutIsValidated) {
  auto comm = World();
  const double before = comm->timeout();
  EXPECT_THROW(comm->set_timeout(-1), Error);
  comm->set_timeout(12.5);
  EXPECT_EQ(comm->timeout(), 12.5);
  comm->set_timeout(before);
}

}  // namespace
}  // namespace doppio
