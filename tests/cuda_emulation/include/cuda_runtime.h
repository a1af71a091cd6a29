#pragma once

// A host emulation of the part of the CUDA runtime that Doppio uses, for builds configured
// with -DDOPPIO_CUDA=EMULATE. The .cu files are compiled by the host compiler against this
// header, so that every GPU code path and GPU test runs on a machine without a GPU: kernels
// run thread by thread (blocks that synchronise run their threads as fibers), device memory
// lives in a guarded arena that host code may not touch, and work issued to a stream runs
// only when something waits for that stream, so a host read that does not wait sees stale
// data. It checks the program's logic (indexing, host/device hand-offs, stream
// synchronisation, cuBLAS conventions, buffer bounds); it says nothing about speed or about
// races between the threads of a kernel.
#include <math.h>

#include <cfloat>
#include <climits>
#include <cmath>
#include <cstddef>
#include <functional>
#include <memory>
#include <tuple>
#include <utility>

#define DOPPIO_CUDA_EMULATION 1

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
// One block runs at a time, so a function-local static is the block's shared memory.
#define __shared__ static

struct uint3 {
  unsigned int x, y, z;
};

struct dim3 {
  unsigned int x, y, z;
  dim3(unsigned int x_ = 1, unsigned int y_ = 1, unsigned int z_ = 1) : x(x_), y(y_), z(z_) {}
};

extern thread_local uint3 threadIdx;
extern thread_local uint3 blockIdx;
extern thread_local dim3 blockDim;
extern thread_local dim3 gridDim;

enum cudaError_t {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorMemoryAllocation = 2,
  cudaErrorInvalidConfiguration = 9,
  cudaErrorInvalidDevice = 101,
  cudaErrorInvalidResourceHandle = 400,
  cudaErrorNotReady = 600,
  cudaErrorIllegalAddress = 700,
};

using cudaStream_t = struct DoppioEmulatedStream*;
using cudaEvent_t = struct DoppioEmulatedEvent*;

enum cudaMemcpyKind {
  cudaMemcpyHostToHost = 0,
  cudaMemcpyHostToDevice = 1,
  cudaMemcpyDeviceToHost = 2,
  cudaMemcpyDeviceToDevice = 3,
  cudaMemcpyDefault = 4,
};

enum cudaMemoryType {
  cudaMemoryTypeUnregistered = 0,
  cudaMemoryTypeHost = 1,
  cudaMemoryTypeDevice = 2,
  cudaMemoryTypeManaged = 3,
};

struct cudaPointerAttributes {
  cudaMemoryType type;
  int device;
  void* devicePointer;
  void* hostPointer;
};

enum cudaDeviceAttr {
  cudaDevAttrClockRate = 13,
  cudaDevAttrKernelExecTimeout = 17,
  cudaDevAttrAsyncEngineCount = 40,
};

struct cudaUUID_t {
  char bytes[16];
};

struct cudaDeviceProp {
  char name[256];
  cudaUUID_t uuid;
  size_t totalGlobalMem;
  size_t sharedMemPerBlock;
  int regsPerBlock;
  int warpSize;
  size_t memPitch;
  int maxThreadsPerBlock;
  int maxThreadsDim[3];
  int maxGridSize[3];
  size_t totalConstMem;
  int major;
  int minor;
  size_t textureAlignment;
  int multiProcessorCount;
  int pciBusID;
  int pciDeviceID;
  int pciDomainID;
};

constexpr unsigned int cudaHostAllocDefault = 0;
constexpr unsigned int cudaHostAllocPortable = 1;
constexpr unsigned int cudaEventDefault = 0;
constexpr unsigned int cudaEventDisableTiming = 2;
constexpr unsigned int cudaStreamDefault = 0;
constexpr unsigned int cudaStreamNonBlocking = 1;

const char* cudaGetErrorString(cudaError_t error);
const char* cudaGetErrorName(cudaError_t error);
cudaError_t cudaGetLastError();
cudaError_t cudaPeekAtLastError();

cudaError_t cudaDriverGetVersion(int* version);
cudaError_t cudaGetDeviceCount(int* count);
cudaError_t cudaSetDevice(int device);
cudaError_t cudaGetDevice(int* device);
cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device);
cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int device);
cudaError_t cudaDeviceGetPCIBusId(char* pci_bus_id, int len, int device);
cudaError_t cudaDeviceSynchronize();
cudaError_t cudaMemGetInfo(size_t* free_bytes, size_t* total_bytes);

cudaError_t cudaMalloc(void** pointer, size_t bytes);
cudaError_t cudaFree(void* pointer);
cudaError_t cudaHostAlloc(void** pointer, size_t bytes, unsigned int flags);
cudaError_t cudaMallocHost(void** pointer, size_t bytes);
cudaError_t cudaFreeHost(void* pointer);
cudaError_t cudaPointerGetAttributes(cudaPointerAttributes* attributes, const void* pointer);
cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind);
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind,
                            cudaStream_t stream = nullptr);
cudaError_t cudaMemset(void* pointer, int value, size_t bytes);
cudaError_t cudaMemsetAsync(void* pointer, int value, size_t bytes, cudaStream_t stream = nullptr);

cudaError_t cudaStreamCreate(cudaStream_t* stream);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned int flags);
cudaError_t cudaStreamDestroy(cudaStream_t stream);
cudaError_t cudaStreamSynchronize(cudaStream_t stream);
cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags = 0);
cudaError_t cudaEventCreate(cudaEvent_t* event);
cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned int flags);
cudaError_t cudaEventDestroy(cudaEvent_t event);
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream = nullptr);
cudaError_t cudaEventQuery(cudaEvent_t event);
cudaError_t cudaEventSynchronize(cudaEvent_t event);
// The host time between the moments the two events' queued positions ran, in ms.
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end);

// Device-side built-ins.
void __syncthreads();
unsigned int __umulhi(unsigned int a, unsigned int b);
int atomicMin(int* address, int value);
float atomicAdd(float* address, float value);
double atomicAdd(double* address, double value);
int atomicAdd(int* address, int value);

// CUDA's global min/max overloads for device code.
inline int min(int a, int b) { return a < b ? a : b; }
inline int max(int a, int b) { return a > b ? a : b; }
inline long long min(long long a, long long b) { return a < b ? a : b; }
inline long long max(long long a, long long b) { return a > b ? a : b; }
inline unsigned int min(unsigned int a, unsigned int b) { return a < b ? a : b; }
inline unsigned int max(unsigned int a, unsigned int b) { return a > b ? a : b; }
inline float min(float a, float b) { return fminf(a, b); }
inline float max(float a, float b) { return fmaxf(a, b); }
inline double min(double a, double b) { return fmin(a, b); }
inline double max(double a, double b) { return fmax(a, b); }

namespace doppio_emulation {

// Queues a grid on `stream`: when the stream runs it, `thread` is called once per thread of
// the grid with threadIdx / blockIdx set. A bad launch shape is reported through
// cudaGetLastError at once, as a real launch does.
void RunGrid(const void* kernel, dim3 grid, dim3 block, cudaStream_t stream,
             std::function<void()> thread);

// kernel<<<grid, block, 0, stream>>>(args...) as Launch(kernel, grid, block, stream)(args...).
template <typename... Params>
class Launch {
 public:
  Launch(void (*kernel)(Params...), dim3 grid, dim3 block, cudaStream_t stream)
      : kernel_(kernel), grid_(grid), block_(block), stream_(stream) {}

  template <typename... Args>
  void operator()(Args&&... args) const {
    // The arguments are taken by value at the launch, as CUDA does.
    auto params = std::make_shared<const std::tuple<Params...>>(std::forward<Args>(args)...);
    void (*kernel)(Params...) = kernel_;
    RunGrid(reinterpret_cast<const void*>(kernel_), grid_, block_, stream_, [kernel, params] {
      std::tuple<Params...> own = *params;  // each thread its own copy, as on a GPU
      std::apply(kernel, own);
    });
  }

 private:
  void (*kernel_)(Params...);
  dim3 grid_;
  dim3 block_;
  cudaStream_t stream_;
};

}  // namespace doppio_emulation
