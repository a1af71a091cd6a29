#include "doppio/parallel/gpu_memory_ops.hpp"

#include "doppio/core/common.hpp"

#ifdef DOPPIO_WITH_CUDA

#include "doppio/device/gpu_util.hpp"

namespace doppio {

namespace {

class CudaEventFence : public DeviceFence {
 public:
  explicit CudaEventFence(cudaEvent_t event) : event_(event) {}
  // Destroying an event that a stream still waits on is allowed: its resources go when
  // the wait is over.
  ~CudaEventFence() override { cudaEventDestroy(event_); }
  cudaEvent_t event() const { return event_; }

 private:
  cudaEvent_t event_;
};

class GpuMemoryOps : public DeviceMemoryOps {
 public:
  explicit GpuMemoryOps(std::shared_ptr<GpuContext> gpu) : gpu_(std::move(gpu)) {
    gpu_->MakeCurrent();
    // Non-blocking: the staging copies do not wait for work on the legacy default stream.
    DOPPIO_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  }
  ~GpuMemoryOps() override {
    cudaSetDevice(gpu_->device());
    cudaStreamSynchronize(stream_);
    cudaStreamDestroy(stream_);
    cudaGetLastError();
  }

  void* AllocatePinned(std::size_t bytes) override {
    gpu_->MakeCurrent();
    void* pointer = nullptr;
    DOPPIO_CUDA_CHECK(cudaHostAlloc(&pointer, bytes, cudaHostAllocPortable));
    return pointer;
  }

  // Called when the communicator shuts down, perhaps at exit: errors are ignored.
  void FreePinned(void* pointer) override {
    cudaFreeHost(pointer);
    cudaGetLastError();
  }

  void CopyToHost(void* host, const void* device, std::size_t bytes) override {
    gpu_->MakeCurrent();
    DOPPIO_CUDA_CHECK(cudaMemcpyAsync(host, device, bytes, cudaMemcpyDeviceToHost, stream_));
    DOPPIO_CUDA_CHECK(cudaStreamSynchronize(stream_));
  }

  void CopyToDevice(void* device, const void* host, std::size_t bytes) override {
    gpu_->MakeCurrent();
    DOPPIO_CUDA_CHECK(cudaMemcpyAsync(device, host, bytes, cudaMemcpyHostToDevice, stream_));
    DOPPIO_CUDA_CHECK(cudaStreamSynchronize(stream_));
  }

  std::shared_ptr<DeviceFence> Fence() override {
    gpu_->MakeCurrent();
    cudaEvent_t event = nullptr;
    DOPPIO_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
    auto fence = std::make_shared<CudaEventFence>(event);
    DOPPIO_CUDA_CHECK(cudaEventRecord(event, gpu_->stream()));
    return fence;
  }

  bool Reached(const DeviceFence& fence) override {
    gpu_->MakeCurrent();
    const cudaError_t status = cudaEventQuery(static_cast<const CudaEventFence&>(fence).event());
    if (status == cudaErrorNotReady) return false;
    DOPPIO_CUDA_CHECK(status);
    return true;
  }

 private:
  std::shared_ptr<GpuContext> gpu_;
  cudaStream_t stream_ = nullptr;
};

}  // namespace

std::shared_ptr<DeviceMemoryOps> MakeGpuMemoryOps(std::shared_ptr<GpuContext> gpu) {
  DOPPIO_ENSURE(gpu != nullptr) << "MakeGpuMemoryOps: no GPU context";
  return std::make_shared<GpuMemoryOps>(std::move(gpu));
}

}  // namespace doppio

#else  // no CUDA

namespace doppio {

std::shared_ptr<DeviceMemoryOps> MakeGpuMemoryOps(std::shared_ptr<GpuContext>) {
  DOPPIO_FAIL() << "device memory staging needs GPU support, and this build of doppio has none "
                   "(built with DOPPIO_CUDA=OFF)";
}

}  // namespace doppio

#endif
