#pragma once

// "Device" memory for the tests of the staged path, which need no GPU.
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "doppio/parallel/staging_communicator.hpp"

namespace doppio {
namespace test {

// "Device" memory that is host memory, counting the staged copies (read once the
// operations are done).
class FakeDevice : public DeviceMemoryOps {
 public:
  void* AllocatePinned(std::size_t bytes) override {
    ++allocations;
    return std::malloc(bytes);
  }
  void FreePinned(void* pointer) override {
    ++frees;
    std::free(pointer);
  }
  void CopyToHost(void* host, const void* device, std::size_t bytes) override {
    ++to_host;
    std::memcpy(host, device, bytes);
  }
  void CopyToDevice(void* device, const void* host, std::size_t bytes) override {
    ++to_device;
    std::memcpy(device, host, bytes);
  }
  int allocations = 0, frees = 0, to_host = 0, to_device = 0;
};

// "Device" work that finishes when the test says so: a staged collective must not copy its
// buffer before then (on a GPU: before the compute stream's kernels have written it).
class GatedDevice : public FakeDevice {
 public:
  std::shared_ptr<DeviceFence> Fence() override { return std::make_shared<DeviceFence>(); }
  bool Reached(const DeviceFence&) override { return open.load(); }
  std::atomic<bool> open{false};
};

}  // namespace test
}  // namespace doppio
