// SyncedMemory, Blob and the device allocator on the GPU. Skipped without a device.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "doppio/core/blob.hpp"
#include "doppio/core/synced_memory.hpp"
#include "doppio/device/gpu_math.hpp"
#include "doppio/util/math_functions.hpp"
#include "gpu_test_util.hpp"
#include "test_util.hpp"

namespace doppio {
namespace {

using Head = SyncedMemory::Head;

class SyncedMemoryGpuTest : public ::testing::Test {
 protected:
  void SetUp() override { DOPPIO_REQUIRE_GPU(); }
};

TEST_F(SyncedMemoryGpuTest, HeadFollowsTheNewestCopy) {
  GpuContext& gpu = *TestGpu();
  SyncedMemory memory(16 * sizeof(float));
  EXPECT_EQ(memory.head(), Head::kUninitialized);
  // A fresh device copy is zeroed, like a fresh host copy.
  const float* device = static_cast<const float*>(memory.gpu_data(gpu));
  EXPECT_NE(device, nullptr);
  EXPECT_EQ(memory.head(), Head::kDevice);
  const float* host = static_cast<const float*>(memory.cpu_data());
  EXPECT_EQ(memory.head(), Head::kSynced);
  for (int i = 0; i < 16; ++i) EXPECT_EQ(host[i], 0.f);
  float* writable = static_cast<float*>(memory.mutable_cpu_data());
  EXPECT_EQ(memory.head(), Head::kHost);
  for (int i = 0; i < 16; ++i) writable[i] = float(i);
  // Up to the device, changed there, and back.
  float* on_device = static_cast<float*>(memory.mutable_gpu_data(gpu));
  EXPECT_EQ(on_device, device);  // the device copy is kept and reused
  EXPECT_EQ(memory.head(), Head::kDevice);
  gpu_scal(gpu, 16, 2.f, on_device);
  host = static_cast<const float*>(memory.cpu_data());
  for (int i = 0; i < 16; ++i) EXPECT_EQ(host[i], 2.f * i);
  EXPECT_EQ(memory.gpu_context().get(), &gpu);
}

TEST_F(SyncedMemoryGpuTest, ViewsForwardDevicePointersToTheirParent) {
  GpuContext& gpu = *TestGpu();
  auto arena = std::make_shared<SyncedMemory>(10 * sizeof(double));
  double* values = static_cast<double*>(arena->mutable_cpu_data());
  for (int i = 0; i < 10; ++i) values[i] = i;
  SyncedMemory view(arena, 4 * sizeof(double), 3 * sizeof(double));
  const double* device_view = static_cast<const double*>(view.gpu_data(gpu));
  EXPECT_EQ(device_view, static_cast<const double*>(arena->gpu_data(gpu)) + 4);
  EXPECT_EQ(arena->head(), Head::kSynced);
  gpu_set(gpu, 3, -1.0, static_cast<double*>(view.mutable_gpu_data(gpu)));
  EXPECT_EQ(view.head(), Head::kDevice);
  EXPECT_EQ(arena->head(), Head::kDevice);
  const double* host = static_cast<const double*>(arena->cpu_data());
  for (int i = 0; i < 10; ++i) EXPECT_EQ(host[i], (i >= 4 && i < 7) ? -1.0 : double(i));
  EXPECT_EQ(view.gpu_context().get(), &gpu);
}

TEST_F(SyncedMemoryGpuTest, PinnedHostMemoryKeepsItsContents) {
  GpuContext& gpu = *TestGpu();
  SyncedMemory memory(8 * sizeof(float));
  float* host = static_cast<float*>(memory.mutable_cpu_data());
  for (int i = 0; i < 8; ++i) host[i] = 1.5f * i;
  EXPECT_FALSE(memory.host_pinned());
  memory.PinHostMemory();
  EXPECT_TRUE(memory.host_pinned());
  const float* pinned = static_cast<const float*>(memory.cpu_data());
  for (int i = 0; i < 8; ++i) EXPECT_EQ(pinned[i], 1.5f * i);
  // An asynchronous upload from the pinned copy.
  cudaStream_t stream = gpu.comm_stream();
  memory.mutable_cpu_data();
  memory.AsyncGpuPush(gpu, stream);
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  EXPECT_EQ(memory.head(), Head::kSynced);
  EXPECT_FLOAT_EQ(gpu_asum(gpu, 8, static_cast<const float*>(memory.gpu_data(gpu))), 1.5f * 28);
}

// Host bytes in a non-canonical layout (here the floats reversed) reach the device in the
// canonical one, through the synchronous and the asynchronous upload.
class Reversed : public HostLayout {
 public:
  void ToCanonical(void* bytes, std::size_t size) const override {
    float* values = static_cast<float*>(bytes);
    std::reverse(values, values + size / sizeof(float));
  }
};

void WriteReversed(SyncedMemory& memory, int n) {
  float* bytes = static_cast<float*>(memory.mutable_raw_cpu_data(std::make_shared<Reversed>()));
  for (int i = 0; i < n; ++i) bytes[n - 1 - i] = float(i);
}

TEST_F(SyncedMemoryGpuTest, UploadsConvertAHostLayoutFirst) {
  GpuContext& gpu = *TestGpu();
  SyncedMemory memory(8 * sizeof(float));
  WriteReversed(memory, 8);
  // Made the newest on the device, so that cpu_data copies the device's bytes back.
  memory.mutable_gpu_data(gpu);
  EXPECT_EQ(memory.cpu_layout(), nullptr);
  const float* host = static_cast<const float*>(memory.cpu_data());
  for (int i = 0; i < 8; ++i) EXPECT_EQ(host[i], float(i));

  memory.PinHostMemory();
  WriteReversed(memory, 8);
  cudaStream_t stream = gpu.comm_stream();
  memory.AsyncGpuPush(gpu, stream);
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  EXPECT_EQ(memory.cpu_layout(), nullptr);
  memory.mutable_gpu_data(gpu);
  host = static_cast<const float*>(memory.cpu_data());
  for (int i = 0; i < 8; ++i) EXPECT_EQ(host[i], float(i));
}

TEST_F(SyncedMemoryGpuTest, AnotherContextIsAnError) {
  GpuContext& gpu = *TestGpu();
  auto other = GpuContext::Create(0);
  SyncedMemory memory(4);
  memory.gpu_data(gpu);
  ExpectError([&] { memory.gpu_data(*other); }, {"another GPU context", "share one GpuContext"});
}

TEST_F(SyncedMemoryGpuTest, AllocatorReusesFreedBlocks) {
  auto gpu = GpuContext::Create(0);
  DeviceAllocator& allocator = gpu->allocator();
  EXPECT_EQ(allocator.Allocate(0), nullptr);
  void* a = allocator.Allocate(1000);
  EXPECT_EQ(allocator.bytes_in_use(), DeviceAllocator::BucketSize(1000));
  allocator.Free(a);
  EXPECT_EQ(allocator.bytes_in_use(), 0u);
  EXPECT_EQ(allocator.bytes_cached(), DeviceAllocator::BucketSize(1000));
  // The same bucket comes back; a much larger request does not take the small block.
  void* b = allocator.Allocate(900);
  EXPECT_EQ(b, a);
  void* c = allocator.Allocate(5 << 20);
  EXPECT_NE(c, a);
  allocator.Free(b);
  allocator.Free(c);
  allocator.EmptyCache();
  EXPECT_EQ(allocator.bytes_cached(), 0u);
}

TEST(DeviceAllocatorBuckets, RoundUp) {
  EXPECT_EQ(DeviceAllocator::BucketSize(1), 512u);
  EXPECT_EQ(DeviceAllocator::BucketSize(512), 512u);
  EXPECT_EQ(DeviceAllocator::BucketSize(513), 1024u);
  EXPECT_EQ(DeviceAllocator::BucketSize((1 << 20) + 1), 2u << 20);
  EXPECT_EQ(DeviceAllocator::BucketSize(5u << 20), 6u << 20);
}

TEST_F(SyncedMemoryGpuTest, OutOfMemoryIsAnErrorNamingTheSize) {
  auto gpu = GpuContext::Create(0);
  ExpectError([&] { gpu->allocator().Allocate(std::size_t(1) << 50); },
              {"cannot allocate", "bytes of device memory"});
}

template <typename Dtype>
class BlobGpuTest : public ::testing::Test {
 protected:
  void SetUp() override { DOPPIO_REQUIRE_GPU(); }
};
TYPED_TEST_SUITE(BlobGpuTest, TestDtypes);

TYPED_TEST(BlobGpuTest, ReductionsAndUpdatesRunWhereTheDataIs) {
  using Dtype = TypeParam;
  GpuContext& gpu = *TestGpu();
  Blob<Dtype> blob({3, 4});
  Rng rng(7);
  FillGaussian(&blob, rng);
  rng_gaussian<Dtype>(blob.count(), Dtype(0), Dtype(1), rng, blob.mutable_cpu_diff());
  std::vector<Dtype> data(blob.cpu_data(), blob.cpu_data() + 12);
  std::vector<Dtype> diff(blob.cpu_diff(), blob.cpu_diff() + 12);
  Dtype asum = 0, sumsq = 0;
  for (Dtype v : data) {
    asum += std::fabs(v);
    sumsq += v * v;
  }
  // Move both to the device: the reductions and the update then run there.
  blob.mutable_gpu_data(gpu);
  blob.mutable_gpu_diff(gpu);
  EXPECT_NEAR(blob.asum_data(), asum, 1e-5);
  EXPECT_NEAR(blob.sumsq_data(), sumsq, 1e-4);
  blob.Update();
  EXPECT_EQ(blob.data()->head(), SyncedMemory::Head::kDevice);
  blob.scale_diff(Dtype(2));
  EXPECT_EQ(blob.diff()->head(), SyncedMemory::Head::kDevice);
  for (int i = 0; i < 12; ++i) {
    EXPECT_NEAR(blob.cpu_data()[i], data[i] - diff[i], 1e-6);
    EXPECT_NEAR(blob.cpu_diff()[i], 2 * diff[i], 1e-6);
  }
  // A device-resident source is copied device to device.
  blob.mutable_gpu_data(gpu);
  Blob<Dtype> copy;
  copy.CopyFrom(blob, false, true);
  EXPECT_EQ(copy.data()->head(), SyncedMemory::Head::kDevice);
  for (int i = 0; i < 12; ++i) EXPECT_EQ(copy.cpu_data()[i], blob.cpu_data()[i]);
}

}  // namespace
}  // namespace doppio
