#include "doppio/parallel/device_timer.hpp"

#include "doppio/core/common.hpp"

#ifdef DOPPIO_WITH_CUDA

#include <vector>

#include "doppio/device/gpu_util.hpp"

namespace doppio {

namespace {

class CudaEventTimer : public DeviceTimer {
 public:
  explicit CudaEventTimer(std::shared_ptr<GpuContext> gpu) : gpu_(std::move(gpu)) {}
  ~CudaEventTimer() override {
    cudaSetDevice(gpu_->device());
    for (cudaEvent_t event : events_) cudaEventDestroy(event);
    cudaGetLastError();
  }

  void Start(double now) override {
    marks_ = 0;
    start_ = now;
    Mark();
  }

  int Mark() override {
    gpu_->MakeCurrent();
    // The events are made once and recorded again every iteration.
    if (marks_ == static_cast<int>(events_.size())) {
      cudaEvent_t event = nullptr;
      DOPPIO_CUDA_CHECK(cudaEventCreate(&event));
      events_.push_back(event);
    }
    DOPPIO_CUDA_CHECK(cudaEventRecord(events_[marks_], gpu_->stream()));
    return marks_++;
  }

  void Resolve() override {
    gpu_->MakeCurrent();
    DOPPIO_CUDA_CHECK(cudaEventSynchronize(events_[marks_ - 1]));
    times_.resize(marks_);
    for (int i = 0; i < marks_; ++i) {
      float ms = 0;
      DOPPIO_CUDA_CHECK(cudaEventElapsedTime(&ms, events_[0], events_[i]));
      times_[i] = start_ + ms * 1e-3;
    }
  }

  double time(int mark) const override { return times_.at(mark); }

 private:
  std::shared_ptr<GpuContext> gpu_;
  std::vector<cudaEvent_t> events_;
  int marks_ = 0;
  double start_ = 0;
  std::vector<double> times_;
};

}  // namespace

std::unique_ptr<DeviceTimer> MakeDeviceTimer(std::shared_ptr<GpuContext> gpu) {
  DOPPIO_ENSURE(gpu != nullptr) << "MakeDeviceTimer: no GPU context";
  return std::make_unique<CudaEventTimer>(std::move(gpu));
}

}  // namespace doppio

#else  // no CUDA

namespace doppio {

std::unique_ptr<DeviceTimer> MakeDeviceTimer(std::shared_ptr<GpuContext>) {
  DOPPIO_FAIL() << "device timing needs GPU support, and this build of doppio has none "
                   "(built with DOPPIO_CUDA=OFF)";
}

}  // namespace doppio

#endif
