#include "doppio/device/gpu_context.hpp"

#include <glog/logging.h>

#include <sstream>

#include "doppio/device/gpu_util.hpp"
#include "doppio/util/error.hpp"

namespace doppio {

#ifdef DOPPIO_WITH_CUDA

const char* CublasStatusName(cublasStatus_t status) {
  switch (status) {
    case CUBLAS_STATUS_SUCCESS:
      return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED:
      return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED:
      return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE:
      return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH:
      return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR:
      return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED:
      return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR:
      return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED:
      return "CUBLAS_STATUS_NOT_SUPPORTED";
    case CUBLAS_STATUS_LICENSE_ERROR:
      return "CUBLAS_STATUS_LICENSE_ERROR";
  }
  return "unknown cuBLAS status";
}

namespace detail {

void ThrowCudaError(cudaError_t status, const char* call, const char* file, int line) {
  // Clear a sticky launch error so that the next check does not report it again.
  cudaGetLastError();
  DOPPIO_FAIL() << "CUDA error in " << call << " (" << file << ":" << line
                << "): " << cudaGetErrorName(status) << ": " << cudaGetErrorString(status);
}

void ThrowCublasError(cublasStatus_t status, const char* call, const char* file, int line) {
  DOPPIO_FAIL() << "cuBLAS error in " << call << " (" << file << ":" << line
                << "): " << CublasStatusName(status);
}

#ifdef DOPPIO_WITH_CUDNN
void ThrowCudnnError(cudnnStatus_t status, const char* call, const char* file, int line) {
  DOPPIO_FAIL() << "cuDNN error in " << call << " (" << file << ":" << line
                << "): " << cudnnGetErrorString(status);
}
#endif

}  // namespace detail

namespace {
// Switches the calling thread to `device` for the lifetime of the guard.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device) {
    if (cudaGetDevice(&previous_) != cudaSuccess) previous_ = -1;
    if (previous_ != device) DOPPIO_CUDA_CHECK(cudaSetDevice(device));
    device_ = device;
  }
  ~DeviceGuard() {
    if (previous_ >= 0 && previous_ != device_) cudaSetDevice(previous_);
  }

 private:
  int previous_ = -1;
  int device_ = -1;
};

constexpr std::size_t kSmallBucket = 512;
constexpr std::size_t kSmallLimit = std::size_t(1) << 20;
constexpr std::size_t kLargeBucket = std::size_t(2) << 20;
}  // namespace

int GpuDeviceCount() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // not sticky, but keep later checks clean
    return 0;
  }
  return count;
}

std::string GpuUnavailableReason() {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    cudaGetLastError();
    return std::string("no usable CUDA device: ") + cudaGetErrorString(status);
  }
  if (count == 0) return "no CUDA device found";
  return "";
}

// --- DeviceAllocator -------------------------------------------------------------------

std::size_t DeviceAllocator::BucketSize(std::size_t bytes) {
  if (bytes <= kSmallLimit) return (bytes + kSmallBucket - 1) / kSmallBucket * kSmallBucket;
  return (bytes + kLargeBucket - 1) / kLargeBucket * kLargeBucket;
}

DeviceAllocator::~DeviceAllocator() {
  // At process exit the CUDA runtime may already be gone: errors are ignored here.
  std::lock_guard<std::mutex> lock(mutex_);
  int previous = -1;
  if (cudaGetDevice(&previous) != cudaSuccess) previous = -1;
  if (previous != device_) cudaSetDevice(device_);
  for (auto& entry : free_) cudaFree(entry.second);
  free_.clear();
  if (!in_use_.empty()) {
    LOG(WARNING) << "GPU " << device_ << ": " << in_use_.size()
                 << " device buffer(s) still in use when their allocator was destroyed";
    for (auto& entry : in_use_) cudaFree(entry.first);
  }
  if (previous >= 0 && previous != device_) cudaSetDevice(previous);
  cudaGetLastError();
}

void DeviceAllocator::ReleaseCachedLocked() {
  for (auto& entry : free_) DOPPIO_CUDA_CHECK(cudaFree(entry.second));
  free_.clear();
  cached_bytes_ = 0;
}

void* DeviceAllocator::Allocate(std::size_t bytes) {
  if (bytes == 0) return nullptr;
  const std::size_t size = BucketSize(bytes);
  std::lock_guard<std::mutex> lock(mutex_);
  // The smallest cached block that fits, if it does not waste more than ~1/8.
  auto it = free_.lower_bound(size);
  if (it != free_.end() && it->first <= size + size / 8) {
    void* ptr = it->second;
    const std::size_t block = it->first;
    free_.erase(it);
    cached_bytes_ -= block;
    in_use_[ptr] = block;
    in_use_bytes_ += block;
    return ptr;
  }
  DeviceGuard guard(device_);
  void* ptr = nullptr;
  cudaError_t status = cudaMalloc(&ptr, size);
  if (status == cudaErrorMemoryAllocation && !free_.empty()) {
    // Give the cache back to the driver and try once more.
    cudaGetLastError();
    DOPPIO_CUDA_CHECK(cudaDeviceSynchronize());
    ReleaseCachedLocked();
    status = cudaMalloc(&ptr, size);
  }
  if (status != cudaSuccess) {
    cudaGetLastError();
    std::size_t free_bytes = 0, total_bytes = 0;
    cudaMemGetInfo(&free_bytes, &total_bytes);
    cudaGetLastError();
    DOPPIO_FAIL() << "GPU " << device_ << ": cannot allocate " << size
                  << " bytes of device memory (" << cudaGetErrorString(status) << "); doppio holds "
                  << in_use_bytes_ << " bytes in use and " << cached_bytes_
                  << " cached, the device has " << free_bytes << " of " << total_bytes
                  << " bytes free";
  }
  in_use_[ptr] = size;
  in_use_bytes_ += size;
  peak_bytes_held_ = std::max(peak_bytes_held_, in_use_bytes_ + cached_bytes_);
  return ptr;
}

void DeviceAllocator::Free(void* ptr) {
  if (ptr == nullptr) return;
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = in_use_.find(ptr);
  CHECK(it != in_use_.end()) << "GPU " << device_
                             << ": freeing a block this allocator did not give";
  free_.emplace(it->second, ptr);
  cached_bytes_ += it->second;
  in_use_bytes_ -= it->second;
  in_use_.erase(it);
}

void DeviceAllocator::EmptyCache() {
  std::lock_guard<std::mutex> lock(mutex_);
  DeviceGuard guard(device_);
  ReleaseCachedLocked();
}

std::size_t DeviceAllocator::bytes_in_use() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return in_use_bytes_;
}

std::size_t DeviceAllocator::bytes_cached() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return cached_bytes_;
}

std::size_t DeviceAllocator::peak_bytes_held() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return peak_bytes_held_;
}

// --- GpuContext ------------------------------------------------------------------------

std::shared_ptr<GpuContext> GpuContext::Create(int device, const GpuOptions& options) {
  const int count = GpuDeviceCount();
  DOPPIO_ENSURE(count > 0) << "GPU " << device << " requested, but " << GpuUnavailableReason()
                           << "; run without --gpu to use the CPU";
  DOPPIO_ENSURE(device >= 0 && device < count)
      << "there is no GPU " << device << ": " << count << " CUDA device(s) found (ids 0 to "
      << count - 1 << ")";
  return std::shared_ptr<GpuContext>(new GpuContext(device, options));
}

GpuContext::GpuContext(int device, const GpuOptions& options) : device_(device), options_(options) {
  DOPPIO_CUDA_CHECK(cudaSetDevice(device_));
  allocator_ = std::make_unique<DeviceAllocator>(device_);
  try {
    // Blocking streams: they also order against any work on the legacy default stream.
    DOPPIO_CUDA_CHECK(cudaStreamCreate(&stream_));
    DOPPIO_CUDA_CHECK(cudaStreamCreate(&comm_stream_));
    DOPPIO_CUBLAS_CHECK(cublasCreate(&cublas_));
    DOPPIO_CUBLAS_CHECK(cublasSetStream(cublas_, stream_));
    // Scalars (alpha, beta, results of dot and asum) live on the host.
    DOPPIO_CUBLAS_CHECK(cublasSetPointerMode(cublas_, CUBLAS_POINTER_MODE_HOST));
    DOPPIO_CUBLAS_CHECK(cublasSetMathMode(
        cublas_, options_.tf32_gemm ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
#ifdef DOPPIO_WITH_CUDNN
    DOPPIO_CUDNN_CHECK(cudnnCreate(&cudnn_));
    DOPPIO_CUDNN_CHECK(cudnnSetStream(cudnn_, stream_));
#endif
  } catch (...) {
#ifdef DOPPIO_WITH_CUDNN
    if (cudnn_) cudnnDestroy(cudnn_);
#endif
    if (cublas_) cublasDestroy(cublas_);
    if (comm_stream_) cudaStreamDestroy(comm_stream_);
    if (stream_) cudaStreamDestroy(stream_);
    throw;
  }
  LOG(INFO) << "Using " << Describe() << (options_.tf32_conv ? ", TF32 convolutions" : "")
            << (options_.tf32_gemm ? ", TF32 GEMMs" : "");
  if (options_.conv_algo == ConvAlgoSearch::kMeasure && !options_.conv_algo_cache.empty()) {
    conv_algo_cache_ = std::make_unique<ConvAlgoCache>(options_.conv_algo_cache, DeviceKey());
    LOG(INFO) << "cuDNN convolution algorithms measured once per shape, kept in "
              << options_.conv_algo_cache << " (" << conv_algo_cache_->size() << " known)";
  }
}

std::string GpuContext::DeviceKey() const {
  std::ostringstream key;
  cudaDeviceProp prop;
  if (cudaGetDeviceProperties(&prop, device_) == cudaSuccess) {
    key << prop.name << " sm_" << prop.major << prop.minor;
  } else {
    cudaGetLastError();
    key << "device " << device_;
  }
  int driver = 0;
  if (cudaDriverGetVersion(&driver) != cudaSuccess) cudaGetLastError();
  key << " driver " << driver;
#ifdef DOPPIO_WITH_CUDNN
  key << " cudnn " << cudnnGetVersion();
#endif
  return key.str();
}

GpuContext::~GpuContext() {
  // Destructors must not throw, and at exit the runtime may be shutting down.
  cudaSetDevice(device_);
  if (stream_) cudaStreamSynchronize(stream_);
  if (workspace_) allocator_->Free(workspace_);
#ifdef DOPPIO_WITH_CUDNN
  if (cudnn_) cudnnDestroy(cudnn_);
#endif
  if (cublas_) cublasDestroy(cublas_);
  if (comm_stream_) cudaStreamDestroy(comm_stream_);
  if (stream_) cudaStreamDestroy(stream_);
  allocator_.reset();
  cudaGetLastError();
}

std::string GpuContext::Describe() const {
  std::ostringstream out;
  out << "GPU " << device_;
  cudaDeviceProp prop;
  if (cudaGetDeviceProperties(&prop, device_) == cudaSuccess) {
    out << " (" << prop.name << ", compute capability " << prop.major << "." << prop.minor << ")";
  } else {
    cudaGetLastError();
  }
  return out.str();
}

int GpuContext::compute_capability() const {
  cudaDeviceProp prop;
  if (cudaGetDeviceProperties(&prop, device_) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return prop.major * 10 + prop.minor;
}

std::string GpuContext::pci_bus_id() const {
  char text[64] = {};
  DOPPIO_CUDA_CHECK(cudaDeviceGetPCIBusId(text, sizeof(text) - 1, device_));
  return text;
}

void GpuContext::MakeCurrent() const {
  int current = -1;
  if (cudaGetDevice(&current) != cudaSuccess || current != device_) {
    DOPPIO_CUDA_CHECK(cudaSetDevice(device_));
  }
}

void GpuContext::Synchronize() const { DOPPIO_CUDA_CHECK(cudaStreamSynchronize(stream_)); }

void* GpuContext::Workspace(std::size_t bytes) {
  if (bytes <= workspace_size_) return workspace_;
  // Earlier users of the old block are queued on the same stream, ahead of any new user of
  // the block the allocator may hand out again.
  if (workspace_) allocator_->Free(workspace_);
  workspace_ = nullptr;
  workspace_size_ = 0;
  workspace_ = allocator_->Allocate(bytes);
  workspace_size_ = bytes;
  return workspace_;
}

#else  // no CUDA

int GpuDeviceCount() { return 0; }

std::string GpuUnavailableReason() {
  return "this build of doppio has no GPU support (built with DOPPIO_CUDA=OFF)";
}

std::shared_ptr<GpuContext> GpuContext::Create(int device, const GpuOptions& options) {
  DOPPIO_FAIL() << "GPU " << device << " requested, but " << GpuUnavailableReason()
                << "; run without --gpu to use the CPU";
}

GpuContext::GpuContext(int device, const GpuOptions& options)
    : device_(device), options_(options) {}
GpuContext::~GpuContext() = default;
std::string GpuContext::Describe() const { return "GPU " + std::to_string(device_); }
std::string GpuContext::DeviceKey() const { return Describe(); }
int GpuContext::compute_capability() const { return 0; }

std::string GpuContext::pci_bus_id() const {
  DOPPIO_FAIL() << "GPU " << device_ << ": " << GpuUnavailableReason();
}

#endif

}  // namespace doppio
