#include "doppio/parallel/nccl_communicator.hpp"

#ifdef DOPPIO_WITH_NCCL

#include <glog/logging.h>
#include <nccl.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <mutex>
#include <sstream>
#include <thread>
#include <vector>

#include "doppio/device/gpu_util.hpp"

namespace doppio {

namespace {

ncclDataType_t ToNccl(CommType type) {
  switch (type) {
    case CommType::kFloat:
      return ncclFloat32;
    case CommType::kDouble:
      return ncclFloat64;
    case CommType::kInt32:
      return ncclInt32;
    case CommType::kInt64:
      return ncclInt64;
    case CommType::kUInt64:
      return ncclUint64;
    case CommType::kByte:
      return ncclUint8;
  }
  return ncclUint8;
}

ncclRedOp_t ToNccl(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return ncclSum;
    case ReduceOp::kMax:
      return ncclMax;
    case ReduceOp::kMin:
      return ncclMin;
  }
  return ncclSum;
}

std::string NcclError(ncclResult_t result, ncclComm_t comm) {
  std::string text = ncclGetErrorString(result);
  const char* last = comm != nullptr ? ncclGetLastError(comm) : nullptr;
  if (last != nullptr && *last != '\0') text += std::string(" (") + last + ")";
  return text;
}

}  // namespace

// One device collective on the communication stream.
struct NcclOp {
  CommHandle handle;
  std::uint64_t seq = 0;
  // Recorded on the communication stream before and after the NCCL call.
  cudaEvent_t start = nullptr;
  cudaEvent_t done = nullptr;
  // The NCCL call has returned and `done` is recorded: the events may be queried.
  bool enqueued = false;
  bool started = false;
  // When it reached the head of the stream (issued, or its predecessor finished): the
  // timeout counts from here.
  double head_since = 0;
};

struct NcclCommunicator::Impl {
  std::shared_ptr<GpuContext> gpu;
  Communicator* base = nullptr;
  ncclComm_t comm = nullptr;
  int nccl_version = 0;

  std::mutex mutex;
  std::condition_variable cv;
  std::deque<NcclOp> in_flight;  // in stream order
  std::uint64_t issued = 0;
  bool stop = false;
  std::atomic<int> waiting{0};
  std::thread watchdog;

  cudaEvent_t NewEvent();
  CommHandle Enqueue(const std::string& label, std::size_t bytes,
                     const std::function<ncclResult_t(cudaStream_t)>& call);
  void Watch();
  [[noreturn]] void Fail(const std::string& message);
};

cudaEvent_t NcclCommunicator::Impl::NewEvent() {
  cudaEvent_t event = nullptr;
  DOPPIO_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
  return event;
}

CommHandle NcclCommunicator::Impl::Enqueue(const std::string& label, std::size_t bytes,
                                           const std::function<ncclResult_t(cudaStream_t)>& call) {
  gpu->MakeCurrent();
  const cudaStream_t stream = gpu->comm_stream();
  // The collective reads what the kernels queued so far on the compute stream write (a
  // gradient bucket that backward has just finished); the kernels queued later run meanwhile.
  cudaEvent_t ready = NewEvent();
  DOPPIO_CUDA_CHECK(cudaEventRecord(ready, gpu->stream()));
  DOPPIO_CUDA_CHECK(cudaStreamWaitEvent(stream, ready, 0));
  // Its resources go once the wait is over.
  DOPPIO_CUDA_CHECK(cudaEventDestroy(ready));

  NcclOp op;
  op.handle = std::make_shared<CommRequest>(label, bytes);
  op.handle->set_wait_hook([this](int delta) {
    if ((waiting += delta) > 0) cv.notify_one();
  });
  op.start = NewEvent();
  op.done = NewEvent();
  DOPPIO_CUDA_CHECK(cudaEventRecord(op.start, stream));
  CommHandle handle = op.handle;
  std::uint64_t seq = 0;
  {
    // Watched from here on: an NCCL call that blocks (connecting to a peer that never
    // comes) times out like one that hangs on the GPU.
    std::lock_guard<std::mutex> lock(mutex);
    seq = op.seq = ++issued;
    op.head_since = CommClockSeconds();
    in_flight.push_back(op);
  }
  const ncclResult_t result = call(stream);
  if (result != ncclSuccess) {
    Fail("rank " + std::to_string(base->rank()) + ": NCCL collective #" + std::to_string(seq) +
         " '" + label + "' failed: " + NcclError(result, comm));
  }
  DOPPIO_CUDA_CHECK(cudaEventRecord(op.done, stream));
  {
    std::lock_guard<std::mutex> lock(mutex);
    for (NcclOp& queued : in_flight) {
      if (queued.seq == seq) queued.enqueued = true;
    }
  }
  cv.notify_one();
  return handle;
}

void NcclCommunicator::Impl::Fail(const std::string& message) {
  LOG(ERROR) << message << ". Aborting the job.";
  // Stops the NCCL kernels that wait for peers, so that the device is released.
  ncclCommAbort(comm);
  base->Abort(static_cast<int>(ExitCode::kLostRank));
  // GCC does not carry [[noreturn]] through a virtual call.
  std::abort();
}

void NcclCommunicator::Impl::Watch() {
  cudaSetDevice(gpu->device());
  while (true) {
    {
      std::unique_lock<std::mutex> lock(mutex);
      if (in_flight.empty()) {
        if (stop) break;
        cv.wait_for(lock, std::chrono::milliseconds(50));
        if (in_flight.empty()) continue;
      }
    }
    // Operations finish in stream order: look at the head only.
    while (true) {
      NcclOp head;
      {
        std::lock_guard<std::mutex> lock(mutex);
        if (in_flight.empty()) break;
        head = in_flight.front();
      }
      const double now = CommClockSeconds();
      if (head.enqueued) {
        if (!head.started) {
          const cudaError_t status = cudaEventQuery(head.start);
          if (status == cudaSuccess) {
            head.handle->MarkStarted(now);
            std::lock_guard<std::mutex> lock(mutex);
            in_flight.front().started = true;
          } else if (status != cudaErrorNotReady) {
            Fail("rank " + std::to_string(base->rank()) + ": CUDA error while '" +
                 head.handle->label() + "' ran: " + cudaGetErrorString(status));
          }
        }
        const cudaError_t status = cudaEventQuery(head.done);
        if (status == cudaSuccess) {
          {
            std::lock_guard<std::mutex> lock(mutex);
            if (!in_flight.front().started) head.handle->MarkStarted(now);
            in_flight.pop_front();
            if (!in_flight.empty()) in_flight.front().head_since = now;
          }
          cudaEventDestroy(head.start);
          cudaEventDestroy(head.done);
          head.handle->MarkDone(now);
          continue;
        }
        if (status != cudaErrorNotReady) {
          Fail("rank " + std::to_string(base->rank()) + ": CUDA error while '" +
               head.handle->label() + "' ran: " + cudaGetErrorString(status));
        }
      }
      ncclResult_t async = ncclSuccess;
      if (ncclCommGetAsyncError(comm, &async) == ncclSuccess && async != ncclSuccess &&
          async != ncclInProgress) {
        Fail("rank " + std::to_string(base->rank()) + ": NCCL error during collective #" +
             std::to_string(head.seq) + " '" + head.handle->label() +
             "': " + NcclError(async, comm));
      }
      const double limit = base->timeout();
      if (limit > 0 && now - head.head_since > limit) {
        std::ostringstream message;
        message << "rank " << base->rank() << ": NCCL collective #" << head.seq << " '"
                << head.handle->label() << "' (" << head.handle->bytes()
                << " bytes) did not complete within " << limit
                << " s (--comm_timeout): a rank did not issue it, or is hung or dead, or the "
                   "GPUs' connection is stuck";
        Fail(message.str());
      }
      // Someone blocked on the result: look again soon; otherwise now and then, so that
      // this thread does not take a core from the ranks' own work.
      std::this_thread::sleep_for(std::chrono::microseconds(waiting.load() > 0 ? 20 : 200));
    }
  }
}

NcclCommunicator::NcclCommunicator(std::shared_ptr<Communicator> base,
                                   std::shared_ptr<GpuContext> gpu)
    : base_(std::move(base)), impl_(std::make_unique<Impl>()) {
  DOPPIO_ENSURE(base_ != nullptr && gpu != nullptr) << "NcclCommunicator: no base or no GPU";
  impl_->gpu = std::move(gpu);
  impl_->base = base_.get();
  impl_->gpu->MakeCurrent();
  ncclGetVersion(&impl_->nccl_version);

  // The id travels as bytes: rank 0 makes it, every rank receives it through MPI.
  ncclUniqueId id;
  std::memset(&id, 0, sizeof(id));
  std::int32_t ok = 1;
  std::string error;
  if (base_->rank() == 0) {
    const ncclResult_t result = ncclGetUniqueId(&id);
    if (result != ncclSuccess) {
      ok = 0;
      error = NcclError(result, nullptr);
    }
  }
  base_->Broadcast(&ok, 1, CommType::kInt32, 0, "NCCL id status");
  if (!ok) {
    base_->BroadcastBytes(&error, 0, "NCCL id error");
    DOPPIO_FAIL() << "rank 0 could not create the NCCL id (ncclGetUniqueId): " << error;
  }
  base_->Broadcast(&id, sizeof(id), CommType::kByte, 0, "NCCL id");
  const ncclResult_t result = ncclCommInitRank(&impl_->comm, base_->size(), id, base_->rank());
  // Every rank learns whether all joined: one that failed leaves no other in a collective.
  ok = result == ncclSuccess ? 1 : 0;
  base_->Allreduce(&ok, 1, CommType::kInt32, ReduceOp::kMin, "NCCL start-up");
  if (!ok) {
    if (impl_->comm != nullptr) ncclCommAbort(impl_->comm);
    DOPPIO_FAIL() << "NCCL could not be initialised on GPU " << impl_->gpu->device()
                  << " (ncclCommInitRank on " << base_->size() << " ranks): "
                  << (result == ncclSuccess ? "another rank failed" : NcclError(result, nullptr));
  }
  impl_->watchdog = std::thread([impl = impl_.get()] { impl->Watch(); });
}

NcclCommunicator::~NcclCommunicator() {
  std::vector<CommHandle> pending;
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    for (const NcclOp& op : impl_->in_flight) pending.push_back(op.handle);
  }
  for (const CommHandle& handle : pending) handle->Wait();
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    impl_->stop = true;
  }
  impl_->cv.notify_all();
  impl_->watchdog.join();
  // Under the base's watchdog: no rank finalises NCCL while another still uses it.
  base_->Barrier("NCCL shutdown");
  impl_->gpu->MakeCurrent();
  const ncclResult_t finalized = ncclCommFinalize(impl_->comm);
  const ncclResult_t destroyed = ncclCommDestroy(impl_->comm);
  if (finalized != ncclSuccess || destroyed != ncclSuccess) {
    LOG(WARNING) << "rank " << base_->rank() << ": releasing the NCCL communicator failed: "
                 << ncclGetErrorString(finalized != ncclSuccess ? finalized : destroyed);
  }
}

std::string NcclCommunicator::description() const {
  std::ostringstream text;
  text << "NCCL " << impl_->nccl_version / 10000 << "." << impl_->nccl_version / 100 % 100 << "."
       << impl_->nccl_version % 100 << " for device buffers (GPU " << impl_->gpu->device()
       << " on this rank), over " << base_->description();
  return text.str();
}

CommHandle NcclCommunicator::IAllreduce(void* buffer, std::size_t count, CommType type, ReduceOp op,
                                        MemoryKind where, const std::string& label) {
  if (where == MemoryKind::kHost) return base_->IAllreduce(buffer, count, type, op, where, label);
  ncclComm_t comm = impl_->comm;
  return impl_->Enqueue(label, count * CommTypeSize(type), [=](cudaStream_t stream) {
    return ncclAllReduce(buffer, buffer, count, ToNccl(type), ToNccl(op), comm, stream);
  });
}

CommHandle NcclCommunicator::IReduce(void* buffer, std::size_t count, CommType type, ReduceOp op,
                                     int root, MemoryKind where, const std::string& label) {
  if (where == MemoryKind::kHost) {
    return base_->IReduce(buffer, count, type, op, root, where, label);
  }
  CheckRoot(root, label);
  ncclComm_t comm = impl_->comm;
  // The result lands on root only; the others' buffers are only read.
  void* recv = rank() == root ? buffer : nullptr;
  return impl_->Enqueue(label, count * CommTypeSize(type), [=](cudaStream_t stream) {
    return ncclReduce(buffer, recv, count, ToNccl(type), ToNccl(op), root, comm, stream);
  });
}

CommHandle NcclCommunicator::IBroadcast(void* buffer, std::size_t count, CommType type, int root,
                                        MemoryKind where, const std::string& label) {
  if (where == MemoryKind::kHost) return base_->IBroadcast(buffer, count, type, root, where, label);
  CheckRoot(root, label);
  ncclComm_t comm = impl_->comm;
  return impl_->Enqueue(label, count * CommTypeSize(type), [=](cudaStream_t stream) {
    return ncclBroadcast(buffer, buffer, count, ToNccl(type), root, comm, stream);
  });
}

CommHandle NcclCommunicator::IAllgather(const void* send, void* recv, std::size_t count,
                                        CommType type, const std::string& label) {
  return base_->IAllgather(send, recv, count, type, label);
}

CommHandle NcclCommunicator::IBarrier(const std::string& label) { return base_->IBarrier(label); }

CommHandle NcclCommunicator::IGatherv(const void* send, std::size_t bytes, void* recv,
                                      const std::vector<std::size_t>& recv_bytes, int root,
                                      const std::string& label) {
  return base_->IGatherv(send, bytes, recv, recv_bytes, root, label);
}

void NcclCommunicator::JoinDeviceWork() {
  impl_->gpu->MakeCurrent();
  cudaEvent_t joined = impl_->NewEvent();
  DOPPIO_CUDA_CHECK(cudaEventRecord(joined, impl_->gpu->comm_stream()));
  DOPPIO_CUDA_CHECK(cudaStreamWaitEvent(impl_->gpu->stream(), joined, 0));
  DOPPIO_CUDA_CHECK(cudaEventDestroy(joined));
}

void NcclCommunicator::set_timeout(double seconds) { base_->set_timeout(seconds); }

void NcclCommunicator::Abort(int exit_code) {
  base_->Abort(exit_code);
  // GCC does not carry [[noreturn]] through a virtual call.
  std::abort();
}

}  // namespace doppio

#endif  // DOPPIO_WITH_NCCL
