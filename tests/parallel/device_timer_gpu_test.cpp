// Per-rank times on a GPU come from CUDA events on the compute stream (DeviceTimer): they
// cover the device's running of the queued work, not the host's queueing of it, which
// returns as soon as the work is launched. On the CPU, GradientSync keeps the host clock.
// Under the CUDA emulation queued work runs only when the host waits for it, so a host
// timer there would see almost nothing of it.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "doppio/parallel/device_timer.hpp"
#include "doppio/parallel/gradient_sync.hpp"
#include "gpu_test_util.hpp"
#include "test_util.hpp"

namespace doppio {
namespace {

// Device work that takes a while to run and no time to queue: memsets of 1 GB in all.
void QueueDeviceWork(GpuContext& gpu, void* buffer, std::size_t bytes) {
  gpu.MakeCurrent();
  for (int i = 0; i < 16; ++i) {
    ASSERT_EQ(cudaSuccess, cudaMemsetAsync(buffer, i, bytes, gpu.stream()));
  }
}

constexpr std::size_t kBytes = std::size_t(64) << 20;

TEST(DeviceTimerGpuTest, MarksTimeTheDeviceWorkNotItsQueueing) {
  DOPPIO_REQUIRE_GPU();
  auto gpu = TestGpu();
  void* buffer = gpu->allocator().Allocate(kBytes);
  gpu->Synchronize();
  auto timer = MakeDeviceTimer(gpu);
  const double start = CommClockSeconds();
  timer->Start(start);
  QueueDeviceWork(*gpu, buffer, kBytes);
  const double queued = CommClockSeconds() - start;
  const int end = timer->Mark();
  ASSERT_EQ(end, 1);
  timer->Resolve();
  EXPECT_EQ(timer->time(0), start);
  EXPECT_GT(timer->time(end) - start, queued)
      << "the span is the queueing, not the running, of the device work";
  // Marks are made again from the start each iteration.
  timer->Start(start + 1);
  EXPECT_EQ(timer->Mark(), 1);
  timer->Resolve();
  EXPECT_GE(timer->time(1), start + 1);
  gpu->allocator().Free(buffer);
}

// x (2 x 10) -> ip (4) -> Euclidean loss.
NetParameter SmallNet() {
  return ParseText<NetParameter>(
      "name: 'small' state { phase: TRAIN } "
      "layer { name: 'in' type: 'Input' top: 'x' top: 'y' "
      "  input_param { shape { dim: 2 dim: 10 } shape { dim: 2 dim: 4 } } } "
      "layer { name: 'ip' type: 'InnerProduct' bottom: 'x' top: 'out' "
      "  inner_product_param { num_output: 4 weight_filler { type: 'gaussian' std: 0.1 } } } "
      "layer { name: 'loss' type: 'EuclideanLoss' bottom: 'out' bottom: 'y' top: 'loss' } ");
}

// GradientSync's end of compute, from which the compute time and the part of communication
// hidden behind backward are measured: on a GPU where backward's queued kernels finish.
TEST(DeviceTimerGpuTest, GradientSyncComputeEndIsWhereTheDeviceFinishedBackward) {
  DOPPIO_REQUIRE_GPU();
  auto gpu = TestGpu();
  Net<float> net(SmallNet(), 1701, gpu);
  SelfCommunicator comm;
  GradientSync<float> sync(&net, &comm, SyncMode::kOverlap, 25, 1);
  auto timer = MakeDeviceTimer(gpu);
  sync.set_device_timer(timer.get());
  void* buffer = gpu->allocator().Allocate(kBytes);
  gpu->Synchronize();

  const double start = CommClockSeconds();
  timer->Start(start);
  sync.BeginIteration();
  net.Forward();
  net.Backward();
  QueueDeviceWork(*gpu, buffer, kBytes);  // the tail of a long backward
  const double queued = CommClockSeconds();
  sync.FinishGradients();
  EXPECT_GT(sync.compute_end(), queued);
  EXPECT_LE(sync.compute_end(), CommClockSeconds());
  gpu->allocator().Free(buffer);
}

TEST(DeviceTimerGpuTest, GradientSyncOnTheCpuKeepsTheHostClock) {
  Net<float> net(SmallNet());
  SelfCommunicator comm;
  GradientSync<float> sync(&net, &comm, SyncMode::kOverlap, 25, 1);
  sync.BeginIteration();
  net.Forward();
  net.Backward();
  const double before = CommClockSeconds();
  sync.FinishGradients();
  const double after = CommClockSeconds();
  EXPECT_GE(sync.compute_end(), before);
  EXPECT_LE(sync.compute_end(), after);
}

}  // namespace
}  // namespace doppio
