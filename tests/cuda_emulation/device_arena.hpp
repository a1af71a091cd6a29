#pragma once

// The emulated device memory: one reserved address range that host code cannot touch.
// Allocations are whole pages followed by an inaccessible guard page, with the data placed
// against the guard, so a kernel that runs off the end of a buffer faults at once (the
// emulation's memcheck). Outside device operations (kernels, copies, cuBLAS) every page is
// inaccessible, so host code that dereferences a device pointer faults too; the fault
// handler names the address and says which of the two it was.
#include <cstddef>
#include <mutex>

namespace doppio_emulation {

// Opens device memory to the calling thread for its lifetime. Device operations are
// serialised: one holds this at a time (it is recursive, so operations may nest).
class DeviceAccess {
 public:
  DeviceAccess();
  ~DeviceAccess();
  DeviceAccess(const DeviceAccess&) = delete;
  DeviceAccess& operator=(const DeviceAccess&) = delete;

 private:
  std::unique_lock<std::recursive_mutex> lock_;
};

// The lock that DeviceAccess holds, for work that needs no device memory.
std::recursive_mutex& DeviceMutex();

// nullptr when out of (emulated) memory. New memory is filled with 0xFF bytes (NaN for
// floating point) because cudaMalloc does not clear it.
void* DeviceAllocate(size_t bytes);
// false when `pointer` is not the start of a live allocation.
bool DeviceFree(void* pointer);
// Whether [pointer, pointer + bytes) lies inside one live allocation.
bool IsDeviceRange(const void* pointer, size_t bytes);
// Whether `pointer` is anywhere inside the device address range (live or not).
bool IsDeviceAddress(const void* pointer);
size_t DeviceBytesInUse();

}  // namespace doppio_emulation
