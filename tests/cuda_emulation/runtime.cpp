// The emulated CUDA runtime: devices, memory, copies, streams and events. Work issued to a
// stream (kernels, asynchronous copies and sets, cuBLAS calls) is queued and runs only when
// the host waits for it: cudaStreamSynchronize, an event's synchronize or query, a stream
// waiting for an event, a synchronous copy, cudaFree, cudaDeviceSynchronize. A program that
// reads results without waiting reads stale memory, as it might on a GPU, but every time.
// The calls are checked too: handles exist, copies go between the memory kinds they claim
// and stay inside their buffers. A timing event's time is the host time at which its
// place in the queue ran, so elapsed times cover the queued work's running, not its issue.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <unordered_set>

#include "cuda_runtime.h"
#include "device_arena.hpp"
#include "runtime_state.hpp"

struct DoppioEmulatedStream {
  bool blocking;  // created without cudaStreamNonBlocking: ordered with the default stream
  std::deque<std::function<void()>> queue;
};
// When a record's place in the queue ran. Shared with the queued marker, which may outlive
// the event (destroying an event with a record pending is allowed).
struct DoppioEventStamp {
  unsigned long long record = 0;  // the number of the record the time belongs to
  bool ran = false;
  double ms = 0;  // host steady clock
};
struct DoppioEmulatedEvent {
  cudaStream_t stream;  // where it was last recorded
  bool recorded;
  bool timing;
  std::shared_ptr<DoppioEventStamp> stamp;
};

namespace doppio_emulation {
namespace {

thread_local cudaError_t last_error = cudaSuccess;
thread_local int current_device = 0;

struct Handles {
  std::mutex mutex;
  std::unordered_set<cudaStream_t> streams;
  std::unordered_set<const void*> events;
  std::unordered_set<const void*> pinned;
  DoppioEmulatedStream default_stream{true, {}};
};
Handles& TheHandles() {
  static Handles* handles = new Handles();
  return *handles;
}

// DOPPIO_EMULATED_GPUS sets how many devices there are (default 1).
int DeviceCount() {
  const char* value = std::getenv("DOPPIO_EMULATED_GPUS");
  if (value == nullptr || *value == '\0') return 1;
  return std::max(0, std::atoi(value));
}

cudaError_t Fail(cudaError_t error, const char* call, const std::string& why) {
  std::fprintf(stderr, "CUDA emulation: %s: %s\n", call, why.c_str());
  SetLastError(error);
  return error;
}

std::string Describe(const void* pointer, size_t bytes) {
  char text[96];
  std::snprintf(text, sizeof(text), "[%p, +%zu bytes)", pointer, bytes);
  return text;
}

// Checks one side of a copy: device memory must lie inside one allocation, host memory
// must not be device memory.
bool CheckSide(const void* pointer, size_t bytes, bool device, const char* call, const char* side) {
  if (device && !IsDeviceRange(pointer, bytes)) {
    Fail(cudaErrorInvalidValue, call,
         std::string(side) + " " + Describe(pointer, bytes) +
             " is not inside one device allocation");
    return false;
  }
  if (!device && IsDeviceAddress(pointer)) {
    Fail(cudaErrorInvalidValue, call,
         std::string(side) + " " + Describe(pointer, bytes) +
             " is device memory but the copy kind says host");
    return false;
  }
  return true;
}

cudaError_t Copy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, cudaStream_t stream,
                 const char* call) {
  if (!IsValidStream(stream)) return Fail(cudaErrorInvalidResourceHandle, call, "bad stream");
  if (bytes == 0) return cudaSuccess;
  bool dst_device = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
  bool src_device = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
  if (kind == cudaMemcpyDefault) {
    dst_device = IsDeviceAddress(dst);
    src_device = IsDeviceAddress(src);
  } else if (kind != cudaMemcpyHostToHost && !dst_device && !src_device) {
    return Fail(cudaErrorInvalidValue, call, "unknown copy kind");
  }
  if (!CheckSide(dst, bytes, dst_device, call, "destination") ||
      !CheckSide(src, bytes, src_device, call, "source")) {
    return cudaErrorInvalidValue;
  }
  Enqueue(stream, [dst, src, bytes] { std::memmove(dst, src, bytes); });
  return cudaSuccess;
}

cudaError_t Set(void* pointer, int value, size_t bytes, cudaStream_t stream, const char* call) {
  if (!IsValidStream(stream)) return Fail(cudaErrorInvalidResourceHandle, call, "bad stream");
  if (bytes == 0) return cudaSuccess;
  if (!CheckSide(pointer, bytes, true, call, "destination")) return cudaErrorInvalidValue;
  Enqueue(stream, [pointer, value, bytes] { std::memset(pointer, value, bytes); });
  return cudaSuccess;
}

bool IsValidEvent(cudaEvent_t event) {
  Handles& h = TheHandles();
  std::lock_guard<std::mutex> lock(h.mutex);
  return h.events.count(event) > 0;
}

}  // namespace

void SetLastError(cudaError_t error) { last_error = error; }

bool IsValidStream(cudaStream_t stream) {
  if (stream == nullptr) return true;
  Handles& h = TheHandles();
  std::lock_guard<std::mutex> lock(h.mutex);
  return h.streams.count(stream) > 0;
}

namespace {

DoppioEmulatedStream& Resolve(cudaStream_t stream) {
  return stream == nullptr ? TheHandles().default_stream : *stream;
}

std::vector<cudaStream_t> BlockingStreams() {
  Handles& h = TheHandles();
  std::lock_guard<std::mutex> lock(h.mutex);
  std::vector<cudaStream_t> streams;
  for (cudaStream_t s : h.streams) {
    if (s->blocking) streams.push_back(s);
  }
  return streams;
}

}  // namespace

void RunStream(cudaStream_t stream) {
  std::lock_guard<std::recursive_mutex> lock(DeviceMutex());
  std::deque<std::function<void()>>& queue = Resolve(stream).queue;
  if (queue.empty()) return;
  DeviceAccess access;
  while (!queue.empty()) {
    std::function<void()> work = std::move(queue.front());
    queue.pop_front();
    work();
  }
}

void RunAllStreams() {
  std::lock_guard<std::recursive_mutex> lock(DeviceMutex());
  RunStream(nullptr);
  Handles& h = TheHandles();
  std::vector<cudaStream_t> streams;
  {
    std::lock_guard<std::mutex> lock(h.mutex);
    streams.assign(h.streams.begin(), h.streams.end());
  }
  for (cudaStream_t s : streams) RunStream(s);
}

// Runs the work an event waits for (conservatively: all its stream has queued).
void RunEventStream(cudaEvent_t event) {
  std::lock_guard<std::recursive_mutex> lock(DeviceMutex());
  if (event->recorded && IsValidStream(event->stream)) RunStream(event->stream);
}

void Enqueue(cudaStream_t stream, std::function<void()> work) {
  std::lock_guard<std::recursive_mutex> lock(DeviceMutex());
  if (stream == nullptr) {
    for (cudaStream_t s : BlockingStreams()) RunStream(s);
  } else if (stream->blocking) {
    RunStream(nullptr);
  }
  Resolve(stream).queue.push_back(std::move(work));
}

}  // namespace doppio_emulation

using doppio_emulation::Fail;
using doppio_emulation::TheHandles;

const char* cudaGetErrorName(cudaError_t error) {
  switch (error) {
    case cudaSuccess:
      return "cudaSuccess";
    case cudaErrorInvalidValue:
      return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation:
      return "cudaErrorMemoryAllocation";
    case cudaErrorInvalidConfiguration:
      return "cudaErrorInvalidConfiguration";
    case cudaErrorInvalidDevice:
      return "cudaErrorInvalidDevice";
    case cudaErrorInvalidResourceHandle:
      return "cudaErrorInvalidResourceHandle";
    case cudaErrorNotReady:
      return "cudaErrorNotReady";
    case cudaErrorIllegalAddress:
      return "cudaErrorIllegalAddress";
  }
  return "cudaErrorUnknown";
}

const char* cudaGetErrorString(cudaError_t error) {
  switch (error) {
    case cudaSuccess:
      return "no error";
    case cudaErrorInvalidValue:
      return "invalid argument";
    case cudaErrorMemoryAllocation:
      return "out of memory";
    case cudaErrorInvalidConfiguration:
      return "invalid configuration argument";
    case cudaErrorInvalidDevice:
      return "invalid device ordinal";
    case cudaErrorInvalidResourceHandle:
      return "invalid resource handle";
    case cudaErrorNotReady:
      return "device not ready";
    case cudaErrorIllegalAddress:
      return "an illegal memory access was encountered";
  }
  return "unknown error";
}

cudaError_t cudaGetLastError() {
  const cudaError_t error = doppio_emulation::last_error;
  doppio_emulation::last_error = cudaSuccess;
  return error;
}

cudaError_t cudaPeekAtLastError() { return doppio_emulation::last_error; }

cudaError_t cudaGetDeviceCount(int* count) {
  *count = doppio_emulation::DeviceCount();
  return cudaSuccess;
}

cudaError_t cudaSetDevice(int device) {
  if (device < 0 || device >= doppio_emulation::DeviceCount()) {
    return Fail(cudaErrorInvalidDevice, "cudaSetDevice", "device " + std::to_string(device));
  }
  doppio_emulation::current_device = device;
  return cudaSuccess;
}

// There is no driver: version 0.
cudaError_t cudaDriverGetVersion(int* version) {
  *version = 0;
  return cudaSuccess;
}

cudaError_t cudaGetDevice(int* device) {
  *device = doppio_emulation::current_device;
  return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device) {
  if (device < 0 || device >= doppio_emulation::DeviceCount()) {
    return Fail(cudaErrorInvalidDevice, "cudaGetDeviceProperties",
                "device " + std::to_string(device));
  }
  std::memset(prop, 0, sizeof(*prop));
  std::snprintf(prop->name, sizeof(prop->name), "Doppio CUDA emulation (host)");
  for (int i = 0; i < 16; ++i) prop->uuid.bytes[i] = static_cast<char>(device * 16 + i);
  prop->totalGlobalMem = size_t(16) << 30;
  prop->sharedMemPerBlock = 48 * 1024;
  prop->regsPerBlock = 65536;
  prop->warpSize = 32;
  prop->memPitch = size_t(1) << 31;
  prop->maxThreadsPerBlock = 1024;
  prop->maxThreadsDim[0] = prop->maxThreadsDim[1] = 1024;
  prop->maxThreadsDim[2] = 64;
  prop->maxGridSize[0] = 0x7FFFFFFF;
  prop->maxGridSize[1] = prop->maxGridSize[2] = 65535;
  prop->totalConstMem = 65536;
  prop->major = 9;
  prop->minor = 0;
  prop->textureAlignment = 512;
  prop->multiProcessorCount = 1;
  prop->pciBusID = device + 1;
  return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int device) {
  if (device < 0 || device >= doppio_emulation::DeviceCount()) {
    return Fail(cudaErrorInvalidDevice, "cudaDeviceGetAttribute",
                "device " + std::to_string(device));
  }
  switch (attr) {
    case cudaDevAttrClockRate:
      *value = 1000000;
      return cudaSuccess;
    case cudaDevAttrKernelExecTimeout:
      *value = 0;
      return cudaSuccess;
    case cudaDevAttrAsyncEngineCount:
      *value = 0;
      return cudaSuccess;
  }
  return Fail(cudaErrorInvalidValue, "cudaDeviceGetAttribute", "attribute not emulated");
}

cudaError_t cudaDeviceGetPCIBusId(char* pci_bus_id, int len, int device) {
  if (device < 0 || device >= doppio_emulation::DeviceCount()) {
    return Fail(cudaErrorInvalidDevice, "cudaDeviceGetPCIBusId",
                "device " + std::to_string(device));
  }
  std::snprintf(pci_bus_id, static_cast<size_t>(len), "0000:%02x:00.0", device + 1);
  return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize() {
  doppio_emulation::RunAllStreams();
  return cudaSuccess;
}

cudaError_t cudaMemGetInfo(size_t* free_bytes, size_t* total_bytes) {
  *total_bytes = size_t(16) << 30;
  const size_t used = doppio_emulation::DeviceBytesInUse();
  *free_bytes = used < *total_bytes ? *total_bytes - used : 0;
  return cudaSuccess;
}

cudaError_t cudaMalloc(void** pointer, size_t bytes) {
  *pointer = doppio_emulation::DeviceAllocate(bytes);
  if (*pointer == nullptr) {
    doppio_emulation::SetLastError(cudaErrorMemoryAllocation);
    return cudaErrorMemoryAllocation;
  }
  return cudaSuccess;
}

cudaError_t cudaFree(void* pointer) {
  if (pointer == nullptr) return cudaSuccess;
  doppio_emulation::RunAllStreams();  // cudaFree waits for the device
  if (!doppio_emulation::DeviceFree(pointer)) {
    return Fail(cudaErrorInvalidValue, "cudaFree",
                doppio_emulation::Describe(pointer, 0) + " is not a live device allocation");
  }
  return cudaSuccess;
}

cudaError_t cudaHostAlloc(void** pointer, size_t bytes, unsigned int flags) {
  *pointer = std::malloc(bytes == 0 ? 1 : bytes);
  if (*pointer == nullptr) return cudaErrorMemoryAllocation;
  auto& h = TheHandles();
  std::lock_guard<std::mutex> lock(h.mutex);
  h.pinned.insert(*pointer);
  (void)flags;
  return cudaSuccess;
}

cudaError_t cudaMallocHost(void** pointer, size_t bytes) {
  return cudaHostAlloc(pointer, bytes, cudaHostAllocDefault);
}

cudaError_t cudaFreeHost(void* pointer) {
  if (pointer == nullptr) return cudaSuccess;
  doppio_emulation::RunAllStreams();  // cudaFreeHost waits for the device
  auto& h = TheHandles();
  {
    std::lock_guard<std::mutex> lock(h.mutex);
    if (h.pinned.erase(pointer) == 0) {
      return Fail(cudaErrorInvalidValue, "cudaFreeHost",
                  doppio_emulation::Describe(pointer, 0) + " was not made by cudaHostAlloc");
    }
  }
  std::free(pointer);
  return cudaSuccess;
}

cudaError_t cudaPointerGetAttributes(cudaPointerAttributes* attributes, const void* pointer) {
  std::memset(attributes, 0, sizeof(*attributes));
  if (doppio_emulation::IsDeviceRange(pointer, 1)) {
    attributes->type = cudaMemoryTypeDevice;
    attributes->device = doppio_emulation::current_device;
    attributes->devicePointer = const_cast<void*>(pointer);
    return cudaSuccess;
  }
  auto& h = TheHandles();
  std::lock_guard<std::mutex> lock(h.mutex);
  attributes->type = h.pinned.count(pointer) ? cudaMemoryTypeHost : cudaMemoryTypeUnregistered;
  attributes->hostPointer = const_cast<void*>(pointer);
  return cudaSuccess;
}

cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind) {
  const cudaError_t status = doppio_emulation::Copy(dst, src, bytes, kind, nullptr, "cudaMemcpy");
  doppio_emulation::RunStream(nullptr);
  return status;
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind,
                            cudaStream_t stream) {
  return doppio_emulation::Copy(dst, src, bytes, kind, stream, "cudaMemcpyAsync");
}

cudaError_t cudaMemset(void* pointer, int value, size_t bytes) {
  const cudaError_t status = doppio_emulation::Set(pointer, value, bytes, nullptr, "cudaMemset");
  doppio_emulation::RunStream(nullptr);
  return status;
}

cudaError_t cudaMemsetAsync(void* pointer, int value, size_t bytes, cudaStream_t stream) {
  return doppio_emulation::Set(pointer, value, bytes, stream, "cudaMemsetAsync");
}

cudaError_t cudaStreamCreate(cudaStream_t* stream) {
  return cudaStreamCreateWithFlags(stream, cudaStreamDefault);
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned int flags) {
  *stream = new (std::nothrow) DoppioEmulatedStream{(flags & cudaStreamNonBlocking) == 0, {}};
  if (*stream == nullptr) return cudaErrorMemoryAllocation;
  auto& h = TheHandles();
  std::lock_guard<std::mutex> lock(h.mutex);
  h.streams.insert(*stream);
  return cudaSuccess;
}

cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  if (stream == nullptr || !doppio_emulation::IsValidStream(stream)) {
    return Fail(cudaErrorInvalidResourceHandle, "cudaStreamDestroy", "not a live stream");
  }
  doppio_emulation::RunStream(stream);  // its work still completes
  auto& h = TheHandles();
  {
    std::lock_guard<std::mutex> lock(h.mutex);
    if (stream == nullptr || h.streams.erase(stream) == 0) {
      return Fail(cudaErrorInvalidResourceHandle, "cudaStreamDestroy", "not a live stream");
    }
  }
  delete stream;
  return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  if (!doppio_emulation::IsValidStream(stream)) {
    return Fail(cudaErrorInvalidResourceHandle, "cudaStreamSynchronize", "not a live stream");
  }
  doppio_emulation::RunStream(stream);
  return cudaSuccess;
}

cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags) {
  if (!doppio_emulation::IsValidStream(stream) || !doppio_emulation::IsValidEvent(event)) {
    return Fail(cudaErrorInvalidResourceHandle, "cudaStreamWaitEvent",
                "not a live stream and event");
  }
  // What `stream` queues from now on must see the event's work: run that work now.
  doppio_emulation::RunEventStream(event);
  (void)flags;
  return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t* event) {
  return cudaEventCreateWithFlags(event, cudaEventDefault);
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned int flags) {
  *event = new (std::nothrow) DoppioEmulatedEvent{
      nullptr, false, (flags & cudaEventDisableTiming) == 0, std::make_shared<DoppioEventStamp>()};
  if (*event == nullptr) return cudaErrorMemoryAllocation;
  auto& h = TheHandles();
  std::lock_guard<std::mutex> lock(h.mutex);
  h.events.insert(*event);
  return cudaSuccess;
}

cudaError_t cudaEventDestroy(cudaEvent_t event) {
  auto& h = TheHandles();
  {
    std::lock_guard<std::mutex> lock(h.mutex);
    if (event == nullptr || h.events.erase(event) == 0) {
      return Fail(cudaErrorInvalidResourceHandle, "cudaEventDestroy", "not a live event");
    }
  }
  delete event;
  return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  if (!doppio_emulation::IsValidEvent(event) || !doppio_emulation::IsValidStream(stream)) {
    return Fail(cudaErrorInvalidResourceHandle, "cudaEventRecord", "not a live event and stream");
  }
  std::lock_guard<std::recursive_mutex> lock(doppio_emulation::DeviceMutex());
  event->stream = stream;
  event->recorded = true;
  if (!event->timing) return cudaSuccess;
  // Only the latest record counts, as on a GPU.
  std::shared_ptr<DoppioEventStamp> stamp = event->stamp;
  const unsigned long long record = ++stamp->record;
  stamp->ran = false;
  doppio_emulation::Enqueue(stream, [stamp, record] {
    if (stamp->record != record) return;
    stamp->ran = true;
    stamp->ms = std::chrono::duration<double, std::milli>(
                    std::chrono::steady_clock::now().time_since_epoch())
                    .count();
  });
  return cudaSuccess;
}

cudaError_t cudaEventQuery(cudaEvent_t event) {
  if (!doppio_emulation::IsValidEvent(event)) {
    return Fail(cudaErrorInvalidResourceHandle, "cudaEventQuery", "not a live event");
  }
  doppio_emulation::RunEventStream(event);
  return cudaSuccess;
}

cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  if (!doppio_emulation::IsValidEvent(event)) {
    return Fail(cudaErrorInvalidResourceHandle, "cudaEventSynchronize", "not a live event");
  }
  doppio_emulation::RunEventStream(event);
  return cudaSuccess;
}

cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  if (ms == nullptr || !doppio_emulation::IsValidEvent(start) ||
      !doppio_emulation::IsValidEvent(end)) {
    return Fail(cudaErrorInvalidResourceHandle, "cudaEventElapsedTime", "not two live events");
  }
  if (!start->timing || !end->timing) {
    return Fail(cudaErrorInvalidResourceHandle, "cudaEventElapsedTime",
                "an event was created with cudaEventDisableTiming");
  }
  std::lock_guard<std::recursive_mutex> lock(doppio_emulation::DeviceMutex());
  if (!start->recorded || !end->recorded) {
    return Fail(cudaErrorInvalidResourceHandle, "cudaEventElapsedTime",
                "an event was never recorded");
  }
  // Like a GPU, it does not wait: work still queued makes the events not ready.
  if (!start->stamp->ran || !end->stamp->ran) return cudaErrorNotReady;
  *ms = static_cast<float>(end->stamp->ms - start->stamp->ms);
  return cudaSuccess;
}
