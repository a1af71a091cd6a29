// The staging copies of the GPU build (MakeGpuMemoryOps): pinned memory, copies both ways,
// and the fence that keeps a staged collective from reading a bucket before the compute
// stream's kernels have written it. Skipped without a device.
#include "doppio/parallel/gpu_memory_ops.hpp"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "doppio/device/gpu_math.hpp"
#include "doppio/util/math_functions.hpp"
#include "gpu_test_util.hpp"

namespace doppio {
namespace {

TEST(GpuMemoryOps, CopiesThroughPinnedMemoryBothWays) {
  DOPPIO_REQUIRE_GPU();
  auto gpu = TestGpu();
  auto ops = MakeGpuMemoryOps(gpu);
  const int n = 1000;
  auto* pinned = static_cast<float*>(ops->AllocatePinned(n * sizeof(float)));
  ASSERT_NE(pinned, nullptr);
  for (int i = 0; i < n; ++i) pinned[i] = 0.5f * i;
  auto* device = static_cast<float*>(gpu->allocator().Allocate(n * sizeof(float)));
  ops->CopyToDevice(device, pinned, n * sizeof(float));
  for (int i = 0; i < n; ++i) pinned[i] = -1;
  ops->CopyToHost(pinned, device, n * sizeof(float));
  for (int i = 0; i < n; ++i) ASSERT_EQ(pinned[i], 0.5f * i) << i;
  gpu->allocator().Free(device);
  ops->FreePinned(pinned);
}

TEST(GpuMemoryOps, AReachedFenceMeansTheKernelsBeforeItAreDone) {
  DOPPIO_REQUIRE_GPU();
  auto gpu = TestGpu();
  auto ops = MakeGpuMemoryOps(gpu);
  const int n = 1 << 24;
  auto* device = static_cast<float*>(gpu->allocator().Allocate(n * sizeof(float)));
  // Enough queued work that the fence is usually not reached at once.
  gpu_set(*gpu, n, 1.f, device);
  for (int k = 0; k < 20; ++k) gpu_scal(*gpu, n, 2.f, device);
  const std::shared_ptr<DeviceFence> fence = ops->Fence();
  ASSERT_NE(fence, nullptr);
  // Polled from another thread, as the communication thread does; the copy it then makes
  // sees the final values.
  std::vector<float> tail(256);
  auto* pinned = static_cast<float*>(ops->AllocatePinned(tail.size() * sizeof(float)));
  std::thread poller([&] {
    while (!ops->Reached(*fence)) std::this_thread::yield();
    ops->CopyToHost(pinned, device + n - tail.size(), tail.size() * sizeof(float));
  });
  poller.join();
  for (std::size_t i = 0; i < tail.size(); ++i) ASSERT_EQ(pinned[i], 1048576.f) << i;
  ops->FreePinned(pinned);
  gpu->Synchronize();
  gpu->allocator().Free(device);
}

}  // namespace
}  // namespace doppio
