#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "doppio/parallel/communicator.hpp"

namespace doppio {

// A point in the work queued on a device (a CUDA event on the compute stream): a collective
// on a device buffer issued after it starts only once the work before it has finished.
class DeviceFence {
 public:
  virtual ~DeviceFence() = default;
};

// Copies between device memory and pinned host memory for the staged path of a
// communicator that cannot read device memory. The GPU build provides one (cudaMemcpyAsync
// on a stream of its own, see gpu_memory_ops.hpp); tests use a fake that copies host memory.
class DeviceMemoryOps {
 public:
  virtual ~DeviceMemoryOps() = default;
  virtual void* AllocatePinned(std::size_t bytes) = 0;
  virtual void FreePinned(void* pointer) = 0;
  // Both return once the copy is complete.
  virtual void CopyToHost(void* host, const void* device, std::size_t bytes) = 0;
  virtual void CopyToDevice(void* device, const void* host, std::size_t bytes) = 0;
  // Called on the thread that issues a collective on a device buffer: marks the device work
  // queued so far (the kernels that write the buffer), which the staged copies must wait
  // for. Null: the device has no work queued asynchronously.
  virtual std::shared_ptr<DeviceFence> Fence() { return nullptr; }
  // Whether the work before `fence` has finished; polled by the staging thread.
  virtual bool Reached(const DeviceFence& /*fence*/) { return true; }
};

// Device buffers for a communicator of host buffers (the MpiCommunicator: Debian's Open MPI
// is not CUDA-aware). Allreduce, reduce and broadcast on MemoryKind::kDevice are staged
// through pinned host memory in chunks of `chunk_bytes`, two chunks in flight: a chunk is
// copied to the host, communicated as a host collective of `base` while the next one is
// copied, and copied back. Everything else goes to `base`.
//
// Nothing is copied before the device work queued ahead of the collective has finished
// (DeviceMemoryOps::Fence): the kernels that write a gradient bucket may still be running
// when backward releases it. Operations issued after a staged one, on host buffers too,
// reach `base` only once all its chunks have: so every rank issues its collectives on
// `base` in one order. A thread of its own does the staging; an error of the device copies
// ends the job (base's Abort), since that thread cannot hand it to the caller.
//
// The chunks are collectives of `base`, under its watchdog. The wait for the fence is
// timed here: device work that has not finished `timeout` seconds after the collective
// reached the head of the queue ends the job too.
//
// Over a base that takes device buffers itself (a CUDA-aware MPI), DeviceBufferPath::kDirect
// keeps all of the above but the copies: each chunk of the device buffer goes to the base as
// it is, once the fence is reached.
enum class DeviceBufferPath { kStaged, kDirect };

class StagingCommunicator : public Communicator {
 public:
  // kDirect needs a base that accepts_device_buffers().
  StagingCommunicator(std::shared_ptr<Communicator> base, std::shared_ptr<DeviceMemoryOps> ops,
                      std::size_t chunk_bytes = std::size_t(4) << 20,
                      DeviceBufferPath path = DeviceBufferPath::kStaged);
  // Waits for the operations in flight, then frees the pinned memory.
  ~StagingCommunicator() override;
  StagingCommunicator(const StagingCommunicator&) = delete;
  StagingCommunicator& operator=(const StagingCommunicator&) = delete;

  int rank() const override { return base_->rank(); }
  int size() const override { return base_->size(); }
  int local_rank() const override { return base_->local_rank(); }
  int local_size() const override { return base_->local_size(); }
  std::string description() const override;

  CommHandle IAllreduce(void* buffer, std::size_t count, CommType type, ReduceOp op,
                        MemoryKind where, const std::string& label) override;
  CommHandle IReduce(void* buffer, std::size_t count, CommType type, ReduceOp op, int root,
                     MemoryKind where, const std::string& label) override;
  CommHandle IBroadcast(void* buffer, std::size_t count, CommType type, int root, MemoryKind where,
                        const std::string& label) override;
  CommHandle IAllgather(const void* send, void* recv, std::size_t count, CommType type,
                        const std::string& label) override;
  CommHandle IBarrier(const std::string& label) override;
  CommHandle IGatherv(const void* send, std::size_t bytes, void* recv,
                      const std::vector<std::size_t>& recv_bytes, int root,
                      const std::string& label) override;
  void Poke() override { base_->Poke(); }
  void set_timeout(double seconds) override { base_->set_timeout(seconds); }
  double timeout() const override { return base_->timeout(); }
  [[noreturn]] void Abort(int exit_code) override;

  struct Impl;

 private:
  std::shared_ptr<Communicator> base_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace doppio
