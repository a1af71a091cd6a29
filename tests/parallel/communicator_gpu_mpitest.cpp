// Collectives on device buffers as an MPI job (CUDA builds only; skipped without a device):
// the StagingCommunicator over MPI with the GPU's own copies (ranks may share a GPU), and NCCL when
// every rank of the node has a GPU of its own. Each writes its buffer with kernels on the compute
// stream and issues the collective at once, without synchronising: the collective must
// still see what the kernels wrote.
#include <gtest/gtest.h>

#include <vector>

#include "doppio/device/gpu_context.hpp"
#include "doppio/device/gpu_math.hpp"
#include "doppio/device/gpu_util.hpp"
#include "doppio/parallel/gpu_memory_ops.hpp"
#include "doppio/parallel/nccl_communicator.hpp"
#include "doppio/parallel/staging_communicator.hpp"
#include "doppio/util/math_functions.hpp"
#include "mpi_test_util.hpp"

namespace doppio {
namespace {

using mpi_test::World;

#define REQUIRE_GPU()                                                      \
  do {                                                                     \
    if (GpuDeviceCount() == 0)                                             \
      GTEST_SKIP() << "no CUDA device (" << GpuUnavailableReason() << ")"; \
  } while (0)

// A device buffer of `n` floats on `gpu`, filled by kernels queued behind a long one.
class DeviceBuffer {
 public:
  DeviceBuffer(std::shared_ptr<GpuContext> gpu, int n) : gpu_(std::move(gpu)), n_(n) {
    data_ = static_cast<float*>(gpu_->allocator().Allocate(n * sizeof(float)));
  }
  ~DeviceBuffer() {
    gpu_->Synchronize();
    gpu_->allocator().Free(data_);
  }
  // data = value, queued on the compute stream behind enough work that a collective that
  // did not wait for it would read what was there before.
  void FillLate(float value) {
    gpu_set(*gpu_, n_, 0.f, data_);
    for (int k = 0; k < 30; ++k) gpu_scal(*gpu_, n_, 1.f, data_);
    gpu_set(*gpu_, n_, value, data_);
  }
  std::vector<float> Read() {
    std::vector<float> host(n_);
    gpu_->Synchronize();
    DOPPIO_CUDA_CHECK(cudaMemcpy(host.data(), data_, n_ * sizeof(float), cudaMemcpyDeviceToHost));
    return host;
  }
  float* data() { return data_; }
  int size() const { return n_; }

 private:
  std::shared_ptr<GpuContext> gpu_;
  int n_;
  float* data_;
};

void ExpectAll(const std::vector<float>& values, float expected, const std::string& what) {
  for (std::size_t i = 0; i < values.size(); i += 4099) {
    ASSERT_EQ(values[i], expected) << what << " element " << i;
  }
  ASSERT_EQ(values.back(), expected) << what;
}

// Allreduce, reduce to rank 1 % n and broadcast from the last rank, on device buffers.
void CheckDeviceCollectives(Communicator& comm, const std::shared_ptr<GpuContext>& gpu) {
  const int n = comm.size();
  const int r = comm.rank();
  DeviceBuffer buffer(gpu, 1 << 22);
  buffer.FillLate(r + 1.f);
  comm.Allreduce(buffer.data(), buffer.size(), CommType::kFloat, ReduceOp::kSum, "allreduce",
                 MemoryKind::kDevice);
  comm.JoinDeviceWork();
  ExpectAll(buffer.Read(), n * (n + 1) / 2.f, "allreduce");

  const int root = 1 % n;
  buffer.FillLate(r + 1.f);
  comm.Reduce(buffer.data(), buffer.size(), CommType::kFloat, ReduceOp::kMax, root, "reduce",
              MemoryKind::kDevice);
  comm.JoinDeviceWork();
  // Only root's buffer changes.
  ExpectAll(buffer.Read(), r == root ? float(n) : r + 1.f, "reduce");

  buffer.FillLate(r == n - 1 ? 7.f : -1.f);
  comm.Broadcast(buffer.data(), buffer.size(), CommType::kFloat, n - 1, "broadcast",
                 MemoryKind::kDevice);
  comm.JoinDeviceWork();
  ExpectAll(buffer.Read(), 7.f, "broadcast");

  // Several in flight at once.
  DeviceBuffer a(gpu, 1000), b(gpu, 3000);
  a.FillLate(1.f);
  b.FillLate(2.f);
  auto first = comm.IAllreduce(a.data(), a.size(), CommType::kFloat, ReduceOp::kSum,
                               MemoryKind::kDevice, "a");
  auto second = comm.IAllreduce(b.data(), b.size(), CommType::kFloat, ReduceOp::kSum,
                                MemoryKind::kDevice, "b");
  second->Wait();
  first->Wait();
  comm.JoinDeviceWork();
  ExpectAll(a.Read(), float(n), "a");
  ExpectAll(b.Read(), 2.f * n, "b");
}

std::shared_ptr<GpuContext> RankGpu(int device) {
  GpuOptions options;
  options.tf32_gemm = false;
  return GpuContext::Create(device, options);
}

TEST(GpuCommunicatorTest, StagedThroughPinnedMemory) {
  REQUIRE_GPU();
  auto comm = World();
  // Ranks share the GPUs there are.
  auto gpu = RankGpu(comm->local_rank() % GpuDeviceCount());
  // Chunks of 1 MB: the 16 MB buffer takes several, two in flight.
  StagingCommunicator staged(comm, MakeGpuMemoryOps(gpu), std::size_t(1) << 20);
  CheckDeviceCollectives(staged, gpu);
}

#ifdef DOPPIO_WITH_NCCL
TEST(GpuCommunicatorTest, NcclWhenEveryRankHasItsOwnGpu) {
  if (World()->size() == 1) GTEST_SKIP() << "one rank communicates nothing";
  const int devices = GpuDeviceCount();
  if (devices < World()->local_size()) {
    GTEST_SKIP() << "NCCL needs a GPU per rank: " << World()->local_size()
                 << " ranks on this node, " << devices << " CUDA device(s)";
  }
  auto gpu = RankGpu(World()->local_rank());
  NcclCommunicator nccl(World(), gpu);
  EXPECT_NE(nccl.description().find("NCCL"), std::string::npos);
  EXPECT_EQ(nccl.rank(), World()->rank());
  EXPECT_EQ(nccl.size(), World()->size());
  CheckDeviceCollectives(nccl, gpu);
  // Host buffers go to MPI.
  std::int32_t value = nccl.rank() + 1;
  nccl.Allreduce(&value, 1, CommType::kInt32, ReduceOp::kSum, "host allreduce");
  EXPECT_EQ(value, nccl.size() * (nccl.size() + 1) / 2);
  const std::vector<std::int32_t> ranks = nccl.AllgatherValue<std::int32_t>(nccl.rank());
  for (int r = 0; r < nccl.size(); ++r) EXPECT_EQ(ranks[r], r);
  nccl.Barrier();
}
#endif

}  // namespace
}  // namespace doppio
