// The CUDA emulation (DOPPIO_CUDA=EMULATE) is what runs the GPU suites on machines without
// a GPU, so it must itself be right: kernels see CUDA's thread geometry and barrier
// semantics, and the checks that stand in for compute-sanitizer and cuBLAS's argument
// checks do fire.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <thread>
#include <vector>

#include "doppio/device/cuda_kernels.cuh"

namespace doppio {
namespace {

__global__ void Iota(long long n, float* y) {
  DOPPIO_KERNEL_LOOP(i, n) { y[i] = static_cast<float>(i); }
}

// Each block sums its slice through shared memory, halving with a barrier per step.
__global__ void BlockSums(int n, const float* x, float* sums) {
  __shared__ float cache[kGpuThreads];
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  cache[threadIdx.x] = i < n ? x[i] : 0.f;
  __syncthreads();
  for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) cache[threadIdx.x] += cache[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) sums[blockIdx.x] = cache[0];
}

__global__ void WriteOnePastTheEnd(int n, float* y) {
  if (blockIdx.x == 0 && threadIdx.x == 0) y[n] = 1.f;
}

// Runs for about `ms` milliseconds: device work that takes time when it runs.
__global__ void Spin(int ms) {
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  }
}

template <typename T>
T* DeviceArray(size_t n) {
  void* p = nullptr;
  EXPECT_EQ(cudaSuccess, cudaMalloc(&p, n * sizeof(T)));
  return static_cast<T*>(p);
}

template <typename T>
std::vector<T> ToHost(const T* device, size_t n) {
  std::vector<T> host(n);
  EXPECT_EQ(cudaSuccess, cudaMemcpy(host.data(), device, n * sizeof(T), cudaMemcpyDeviceToHost));
  return host;
}

TEST(CudaEmulation, GridStrideLoopCoversEveryElement) {
  const int n = 1000;
  float* y = DeviceArray<float>(n);
  DOPPIO_LAUNCH(Iota, 2, 64, nullptr)(n, y);  // 128 threads for 1000 elements
  ASSERT_EQ(cudaSuccess, cudaGetLastError());
  const std::vector<float> host = ToHost(y, n);
  for (int i = 0; i < n; ++i) ASSERT_EQ(i, host[i]);
  cudaFree(y);
}

TEST(CudaEmulation, BarriersSynchroniseTheThreadsOfABlock) {
  const int n = 1000, blocks = (n + kGpuThreads - 1) / kGpuThreads;
  std::vector<float> x(n);
  for (int i = 0; i < n; ++i) x[i] = static_cast<float>(i % 7);
  float* dx = DeviceArray<float>(n);
  float* sums = DeviceArray<float>(blocks);
  cudaMemcpy(dx, x.data(), n * sizeof(float), cudaMemcpyHostToDevice);
  for (int launch = 0; launch < 2; ++launch) {  // the first launch learns the kernel syncs
    DOPPIO_LAUNCH(BlockSums, blocks, kGpuThreads, nullptr)(n, dx, sums);
    ASSERT_EQ(cudaSuccess, cudaGetLastError());
    const std::vector<float> host = ToHost(sums, blocks);
    for (int b = 0; b < blocks; ++b) {
      float expected = 0;
      for (int i = b * kGpuThreads; i < std::min(n, (b + 1) * kGpuThreads); ++i) expected += x[i];
      EXPECT_EQ(expected, host[b]) << "block " << b;
    }
  }
  cudaFree(dx);
  cudaFree(sums);
}

TEST(CudaEmulation, StreamWorkRunsOnlyWhenTheHostWaitsForIt) {
  const int n = 256;
  float* y = DeviceArray<float>(n);
  cudaStream_t stream;
  ASSERT_EQ(cudaSuccess, cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  std::vector<float> host(n, -1.f);
  DOPPIO_LAUNCH(Iota, 1, kGpuThreads, stream)(n, y);
  ASSERT_EQ(cudaSuccess,
            cudaMemcpyAsync(host.data(), y, n * sizeof(float), cudaMemcpyDeviceToHost, stream));
  EXPECT_EQ(-1.f, host[7]) << "read before waiting: the copy has not run";
  cudaEvent_t done;
  ASSERT_EQ(cudaSuccess, cudaEventCreate(&done));
  ASSERT_EQ(cudaSuccess, cudaEventRecord(done, stream));
  ASSERT_EQ(cudaSuccess, cudaEventSynchronize(done));
  EXPECT_EQ(7.f, host[7]);
  // The legacy default stream does not wait for a non-blocking stream's work.
  DOPPIO_LAUNCH(Iota, 1, kGpuThreads, stream)(n / 2, y + n / 2);
  std::vector<float> early(n);
  cudaMemcpy(early.data(), y, n * sizeof(float), cudaMemcpyDeviceToHost);
  EXPECT_EQ(n - 1, early[n - 1]);
  ASSERT_EQ(cudaSuccess, cudaStreamSynchronize(stream));
  EXPECT_EQ(n / 2 - 1, ToHost(y, n)[n - 1]);
  cudaEventDestroy(done);
  cudaStreamDestroy(stream);
  cudaFree(y);
}

// Timing events measure when the queued work ran, not when the host issued it: the host's
// pause between the records is not in the elapsed time, the kernel's running is.
TEST(CudaEmulation, EventsTimeTheQueuedWorkWhenItRuns) {
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaSuccess, cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaEvent_t start = nullptr, end = nullptr, untimed = nullptr;
  ASSERT_EQ(cudaSuccess, cudaEventCreate(&start));
  ASSERT_EQ(cudaSuccess, cudaEventCreate(&end));
  ASSERT_EQ(cudaSuccess, cudaEventCreateWithFlags(&untimed, cudaEventDisableTiming));
  ASSERT_EQ(cudaSuccess, cudaEventRecord(start, stream));
  DOPPIO_LAUNCH(Spin, 1, 1, stream)(30);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  ASSERT_EQ(cudaSuccess, cudaEventRecord(end, stream));
  float ms = -1;
  // Nothing has waited for the stream: its work, the records' included, has not run.
  EXPECT_EQ(cudaErrorNotReady, cudaEventElapsedTime(&ms, start, end));
  ASSERT_EQ(cudaSuccess, cudaEventSynchronize(end));
  ASSERT_EQ(cudaSuccess, cudaEventElapsedTime(&ms, start, end));
  EXPECT_GE(ms, 29.f);
  EXPECT_LT(ms, 250.f);
  ASSERT_EQ(cudaSuccess, cudaEventRecord(untimed, stream));
  ASSERT_EQ(cudaSuccess, cudaEventSynchronize(untimed));
  EXPECT_EQ(cudaErrorInvalidResourceHandle, cudaEventElapsedTime(&ms, start, untimed));
  cudaGetLastError();
  for (cudaEvent_t event : {start, end, untimed}) EXPECT_EQ(cudaSuccess, cudaEventDestroy(event));
  EXPECT_EQ(cudaSuccess, cudaStreamDestroy(stream));
}

TEST(CudaEmulation, ABadLaunchShapeIsReportedByCudaGetLastError) {
  float* y = DeviceArray<float>(4);
  DOPPIO_LAUNCH(Iota, 0, 64, nullptr)(4, y);
  EXPECT_EQ(cudaErrorInvalidConfiguration, cudaGetLastError());
  DOPPIO_LAUNCH(Iota, 1, 2048, nullptr)(4, y);
  EXPECT_EQ(cudaErrorInvalidConfiguration, cudaGetLastError());
  EXPECT_EQ(cudaSuccess, cudaGetLastError());
  cudaFree(y);
}

TEST(CudaEmulation, NewDeviceMemoryIsNotZero) {
  float* y = DeviceArray<float>(64);
  for (float v : ToHost(y, 64)) EXPECT_TRUE(std::isnan(v));
  cudaFree(y);
}

TEST(CudaEmulation, CopiesMustStayInsideTheirAllocationAndMatchTheirKind) {
  float* y = DeviceArray<float>(64);
  std::vector<float> host(128, 1.f);
  EXPECT_EQ(cudaErrorInvalidValue,
            cudaMemcpy(y, host.data(), 128 * sizeof(float), cudaMemcpyHostToDevice));
  EXPECT_EQ(cudaErrorInvalidValue,
            cudaMemcpy(host.data(), y, 64 * sizeof(float), cudaMemcpyHostToDevice));
  EXPECT_EQ(cudaSuccess, cudaMemcpy(y, host.data(), 64 * sizeof(float), cudaMemcpyHostToDevice));
  EXPECT_EQ(cudaErrorInvalidValue, cudaFree(y + 1));
  EXPECT_EQ(cudaSuccess, cudaFree(y));
  EXPECT_EQ(cudaErrorInvalidValue, cudaFree(y));
}

TEST(CudaEmulation, DestroyedStreamsAndEventsAreInvalidHandles) {
  cudaStream_t stream;
  cudaEvent_t event;
  ASSERT_EQ(cudaSuccess, cudaStreamCreate(&stream));
  ASSERT_EQ(cudaSuccess, cudaEventCreate(&event));
  EXPECT_EQ(cudaSuccess, cudaEventRecord(event, stream));
  EXPECT_EQ(cudaSuccess, cudaStreamWaitEvent(stream, event, 0));
  EXPECT_EQ(cudaSuccess, cudaStreamDestroy(stream));
  EXPECT_EQ(cudaSuccess, cudaEventDestroy(event));
  EXPECT_EQ(cudaErrorInvalidResourceHandle, cudaEventRecord(event, nullptr));
  EXPECT_EQ(cudaErrorInvalidResourceHandle, cudaStreamSynchronize(stream));
}

TEST(CudaEmulation, CublasIsColumnMajorAndChecksItsOperands) {
  cublasHandle_t handle;
  ASSERT_EQ(CUBLAS_STATUS_SUCCESS, cublasCreate(&handle));
  // Column-major A (2x3) = [1 3 5; 2 4 6], B (3x1) = [1 1 1]: A B = [9; 12].
  const std::vector<float> a = {1, 2, 3, 4, 5, 6}, b = {1, 1, 1};
  float* da = DeviceArray<float>(6);
  float* db = DeviceArray<float>(3);
  float* dc = DeviceArray<float>(2);
  cudaMemcpy(da, a.data(), sizeof(float) * 6, cudaMemcpyHostToDevice);
  cudaMemcpy(db, b.data(), sizeof(float) * 3, cudaMemcpyHostToDevice);
  const float one = 1, zero = 0;
  ASSERT_EQ(CUBLAS_STATUS_SUCCESS, cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, 2, 1, 3, &one, da,
                                               2, db, 3, &zero, dc, 2));
  EXPECT_EQ((std::vector<float>{9, 12}), ToHost(dc, 2));
  // A leading dimension below the rows, and a matrix reaching past its buffer.
  EXPECT_EQ(CUBLAS_STATUS_INVALID_VALUE, cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, 2, 1, 3,
                                                     &one, da, 1, db, 3, &zero, dc, 2));
  EXPECT_EQ(CUBLAS_STATUS_INVALID_VALUE, cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, 2, 1, 4,
                                                     &one, da, 2, db, 4, &zero, dc, 2));
  // Host pointer mode with the scalar in device memory.
  EXPECT_EQ(CUBLAS_STATUS_INVALID_VALUE,
            cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, 2, 1, 3, dc, da, 2, db, 3, &zero, dc, 2));
  float dot = 0;
  EXPECT_EQ(CUBLAS_STATUS_SUCCESS, cublasSdot(handle, 3, da, 1, db, 1, &dot));
  EXPECT_EQ(6.f, dot);
  cublasDestroy(handle);
  cudaFree(da);
  cudaFree(db);
  cudaFree(dc);
}

TEST(CudaEmulationDeathTest, AKernelWritingPastItsBufferFaults) {
  EXPECT_DEATH(
      {
        float* y = DeviceArray<float>(1024);  // 4 KiB: the guard page follows at once
        DOPPIO_LAUNCH(WriteOnePastTheEnd, 1, 1, nullptr)(1024, y);
        cudaDeviceSynchronize();
      },
      "a kernel or copy ran outside its buffer");
}

TEST(CudaEmulationDeathTest, HostCodeReadingDeviceMemoryFaults) {
  EXPECT_DEATH(
      {
        float* y = DeviceArray<float>(16);
        volatile float v = y[0];
        (void)v;
      },
      "host code dereferenced a device pointer");
}

}  // namespace
}  // namespace doppio
