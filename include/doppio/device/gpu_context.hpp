#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "doppio/device/conv_algo_cache.hpp"

#ifdef DOPPIO_WITH_CUDA
#include <cublas_v2.h>
#include <cuda_runtime.h>
#ifdef DOPPIO_WITH_CUDNN
#include <cudnn.h>
#endif
#endif

namespace doppio {

// How cuDNN convolution layers choose their algorithms.
enum class ConvAlgoSearch {
  kHeuristic,  // cuDNN's heuristics (cudnnGet*Algorithm_v7): instant, usually near the best
  kMeasure,    // time every algorithm once per shape (cudnnFind*AlgorithmEx): slower start
};

// Choices that apply to everything running on one GPU context. The defaults follow PyTorch:
// TF32 tensor cores for float32 cuDNN convolutions, exact float32 for cuBLAS GEMMs.
struct GpuOptions {
  bool tf32_conv = true;
  bool tf32_gemm = false;
  ConvAlgoSearch conv_algo = ConvAlgoSearch::kHeuristic;
  // The most device memory one cuDNN convolution call may use as scratch.
  std::size_t conv_workspace_limit = std::size_t(1) << 30;
  // With kMeasure: the file the measured choices are kept in (ConvAlgoCache), so that later
  // runs and the other ranks of a node skip the search; empty: measure every run.
  std::string conv_algo_cache;
};

// The number of CUDA devices this process can use: 0 in a build without CUDA, without a
// driver, or on a machine without a GPU. Never throws.
int GpuDeviceCount();
// Why GpuDeviceCount() is 0, for messages ("built without CUDA", the driver's error, ...);
// empty when there are devices.
std::string GpuUnavailableReason();

#ifdef DOPPIO_WITH_CUDA

// Caches device memory per device so that the blobs reallocated during training do not
// pay for cudaMalloc/cudaFree (both synchronise the device). Blocks are rounded up to a
// bucket size and kept on a free list per size; a request takes the smallest cached block
// that fits without wasting more than about an eighth. When cudaMalloc fails the cache is
// released and the allocation retried; if it still fails, Error names the sizes.
//
// Freed blocks are reused in stream order: every user of one allocator runs its kernels on
// the same compute stream (its GpuContext's), so a block freed while a kernel still reads
// it can only be rewritten by later work on that stream.
class DeviceAllocator {
 public:
  explicit DeviceAllocator(int device) : device_(device) {}
  ~DeviceAllocator();
  DeviceAllocator(const DeviceAllocator&) = delete;
  DeviceAllocator& operator=(const DeviceAllocator&) = delete;

  // nullptr for 0 bytes.
  void* Allocate(std::size_t bytes);
  void Free(void* ptr);
  // Returns every cached (unused) block to the driver.
  void EmptyCache();

  std::size_t bytes_in_use() const;
  std::size_t bytes_cached() const;
  // The most device memory this allocator has held from the driver at once (in use and
  // cached): its peak on the device.
  std::size_t peak_bytes_held() const;
  int device() const { return device_; }

  // The size a request of `bytes` is rounded up to.
  static std::size_t BucketSize(std::size_t bytes);

 private:
  void ReleaseCachedLocked();

  int device_;
  mutable std::mutex mutex_;
  std::unordered_map<void*, std::size_t> in_use_;  // block -> bucket size
  std::multimap<std::size_t, void*> free_;         // bucket size -> cached block
  std::size_t in_use_bytes_ = 0;
  std::size_t cached_bytes_ = 0;
  std::size_t peak_bytes_held_ = 0;
};

#endif  // DOPPIO_WITH_CUDA

// Everything one process (one rank) needs to run on one GPU: the device id, a stream for
// compute and one for communication, the cuBLAS and cuDNN handles bound to the compute
// stream, the device memory allocator, a shared scratch workspace and the options. It is
// owned by whoever runs the nets (a Solver, a tool, a test) and handed to every Net, layer
// and blob that works on the device: there is no process-wide "current" context.
//
// All work is queued on the compute stream, in order; transfers to the host wait for it.
// A context is used by one thread at a time (its allocator alone is thread-safe).
class GpuContext : public std::enable_shared_from_this<GpuContext> {
 public:
  // Opens `device`. Throws Error when the build has no CUDA, when there is no such device,
  // or when the driver, cuBLAS or cuDNN cannot be initialised.
  static std::shared_ptr<GpuContext> Create(int device, const GpuOptions& options = GpuOptions());
  ~GpuContext();
  GpuContext(const GpuContext&) = delete;
  GpuContext& operator=(const GpuContext&) = delete;

  int device() const { return device_; }
  const GpuOptions& options() const { return options_; }
  // "GPU 0 (NVIDIA H100 80GB HBM3, compute capability 9.0)".
  std::string Describe() const;
  // 90 for compute capability 9.0; 0 where the runtime cannot say.
  int compute_capability() const;
  // The device's PCI location, "0000:3b:00.0" (cudaDeviceGetPCIBusId): unlike the device id,
  // which counts the devices of CUDA_VISIBLE_DEVICES, the same in every process on the node.
  std::string pci_bus_id() const;

#ifdef DOPPIO_WITH_CUDA
  cudaStream_t stream() const { return stream_; }
  cudaStream_t comm_stream() const { return comm_stream_; }
  cublasHandle_t cublas() const { return cublas_; }
#ifdef DOPPIO_WITH_CUDNN
  cudnnHandle_t cudnn() const { return cudnn_; }
#endif
  DeviceAllocator& allocator() { return *allocator_; }
  // Makes this context's device the calling thread's current CUDA device.
  void MakeCurrent() const;
  // Waits until all work queued on the compute stream has finished.
  void Synchronize() const;
  // Device scratch of at least `bytes`, valid until the next call. The layers that use it
  // (cuDNN convolutions) run one after another on the compute stream, so they can share it.
  void* Workspace(std::size_t bytes);
  std::size_t workspace_size() const { return workspace_size_; }
#endif
  // The measured convolution algorithms (GpuOptions::conv_algo_cache, keyed by this device,
  // its driver and cuDNN); null unless the options measure and name a file.
  ConvAlgoCache* conv_algo_cache() { return conv_algo_cache_.get(); }
  // "NVIDIA H100 80GB HBM3 sm_90 driver 13000 cudnn 91000": what a measurement depends on
  // besides the problem.
  std::string DeviceKey() const;

 private:
  GpuContext(int device, const GpuOptions& options);

  int device_;
  GpuOptions options_;
#ifdef DOPPIO_WITH_CUDA
  cudaStream_t stream_ = nullptr;
  cudaStream_t comm_stream_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
#ifdef DOPPIO_WITH_CUDNN
  cudnnHandle_t cudnn_ = nullptr;
#endif
  std::unique_ptr<DeviceAllocator> allocator_;
  void* workspace_ = nullptr;
  std::size_t workspace_size_ = 0;
#endif
  std::unique_ptr<ConvAlgoCache> conv_algo_cache_;
};

}  // namespace doppio
