#pragma once

#include <memory>
#include <string>

#include "doppio/device/gpu_context.hpp"
#include "doppio/parallel/communicator.hpp"

namespace doppio {

// Whether this build has NCCL (DOPPIO_NCCL found it at configure time).
constexpr bool kBuiltWithNccl =
#ifdef DOPPIO_WITH_NCCL
    true;
#else
    false;
#endif

#ifdef DOPPIO_WITH_NCCL

// The communicator of ranks that each have a GPU of their own (docs/design.md, "Data-parallel
// training"): collectives on device buffers (allreduce, reduce, broadcast) run as NCCL operations
// on the GPU context's communication stream; everything else (host buffers, allgather, barrier,
// gatherv, abort) goes to the communicator it was built on, normally the MpiCommunicator.
//
// A device collective is ordered after the work queued on the compute stream when it is
// issued (an event recorded there, waited for by the communication stream), so a gradient
// bucket is reduced while the backward kernels queued after it still run. Its handle
// completes when the NCCL operation has finished on the GPU: a watchdog thread polls an
// event recorded after it. That thread also enforces the timeout: a device collective
// still unfinished `timeout` seconds after it reached the head of the stream aborts the
// NCCL communicator (ncclCommAbort) and then the job, with a message naming the operation;
// an asynchronous NCCL error ends the job the same way.
class NcclCommunicator : public Communicator {
 public:
  // Collective over every rank of `base`: rank 0 creates the NCCL id, `base` broadcasts it,
  // and every rank joins on the device of `gpu` (ncclCommInitRank). The timeout is `base`'s.
  // Throws Error when NCCL cannot be initialised.
  NcclCommunicator(std::shared_ptr<Communicator> base, std::shared_ptr<GpuContext> gpu);
  // Waits for the device collectives in flight, then releases the NCCL communicator (after
  // a barrier of every rank, so that none leaves while another still communicates).
  ~NcclCommunicator() override;
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

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
  void JoinDeviceWork() override;
  void set_timeout(double seconds) override;
  double timeout() const override { return base_->timeout(); }
  [[noreturn]] void Abort(int exit_code) override;

  struct Impl;

 private:
  std::shared_ptr<Communicator> base_;
  std::unique_ptr<Impl> impl_;
};

#endif  // DOPPIO_WITH_NCCL

}  // namespace doppio
