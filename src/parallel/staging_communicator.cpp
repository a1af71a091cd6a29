#include "doppio/parallel/staging_communicator.hpp"

#include <glog/logging.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <functional>
#include <list>
#include <mutex>
#include <sstream>
#include <thread>

#include "doppio/core/common.hpp"

namespace doppio {

namespace {

enum class StagedKind { kAllreduce, kReduce, kBroadcast };

// A collective on device memory through pinned host chunks: copy a chunk to the host,
// communicate it on the base while the next one is copied, copy the result back.
struct StagedOp {
  StagedKind kind = StagedKind::kAllreduce;
  std::shared_ptr<DeviceFence> fence;
  bool fence_reached = false;
  char* device = nullptr;
  std::size_t count = 0;
  CommType type = CommType::kByte;
  ReduceOp op = ReduceOp::kSum;
  int root = 0;
  std::size_t chunk_elements = 0;
  std::size_t next_chunk = 0;
  std::size_t num_chunks = 0;
  // When it reached the head of the queue: the fence's wait is timed from here.
  double started = 0;
  struct InFlight {
    std::size_t chunk;
    void* host;
    CommHandle request;
  };
  std::deque<InFlight> in_flight;

  bool CopiesIn(int rank) const { return kind != StagedKind::kBroadcast || rank == root; }
  bool CopiesOut(int rank) const {
    return kind == StagedKind::kAllreduce || (kind == StagedKind::kReduce && rank == root) ||
           (kind == StagedKind::kBroadcast && rank != root);
  }
  bool AllIssued() const { return next_chunk == num_chunks; }
  bool Done() const { return AllIssued() && in_flight.empty(); }
};

// One operation in issue order: a staged one, or one on host buffers issued behind a
// staged one, which reaches the base once that one has issued every chunk.
struct Entry {
  CommHandle handle;
  std::unique_ptr<StagedOp> staged;
  std::function<CommHandle()> issue;
};

// How the staging thread is woken: by an operation issued, a chunk done, a caller that
// starts waiting. Shared with the callbacks of handles, which may outlive the communicator.
struct Waker {
  std::mutex mutex;
  std::condition_variable cv;
  bool woken = false;
  // Callers blocked in Wait on this communicator's handles.
  std::atomic<int> waiting{0};

  void Wake() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      woken = true;
    }
    cv.notify_one();
  }
};

}  // namespace

struct StagingCommunicator::Impl {
  Communicator* base = nullptr;
  std::shared_ptr<DeviceMemoryOps> ops;
  std::size_t chunk_bytes = 0;
  DeviceBufferPath path = DeviceBufferPath::kStaged;
  std::thread thread;
  std::shared_ptr<Waker> waker = std::make_shared<Waker>();

  // Guards the queue; held while anything is issued on the base, so that the base sees
  // the operations in the order they were issued here.
  std::mutex mutex;
  std::deque<Entry> queue;
  bool stop = false;

  // Staging-thread state: staged operations whose chunks are all issued, some in flight;
  // the base's handles of the host operations issued from the queue; pinned chunks.
  std::list<Entry> draining;
  std::deque<CommHandle> forwarded;
  std::vector<void*> pinned_pool;

  CommHandle NewHandle(const std::string& label, std::size_t bytes);
  CommHandle Issue(std::function<CommHandle()> issue, const std::string& label, std::size_t bytes);
  CommHandle Stage(StagedKind kind, void* buffer, std::size_t count, CommType type, ReduceOp op,
                   int root, const std::string& label);

  void Run();
  // One round over every operation; true if any moved on. `fence_pending`: the head waits
  // for its device work.
  bool Step(bool* fence_pending);
  bool IssueQueued(bool* fence_pending);
  // Issues chunks (two in flight) and copies back those done; true if any.
  bool Pump(StagedOp& op, const std::string& label);
  void IssueChunk(StagedOp& op, const std::string& label);
  bool FenceReached(StagedOp& op);
  void CheckFenceTimeout(const StagedOp& op, const CommRequest& handle);
  void Rest(bool fence_pending);
  // The oldest base operation not done yet that this thread issued, or null.
  CommHandle OldestInFlight();
  void* AcquirePinned();

  // Runs a part of `handle`'s operation; an error (a CUDA error of the device copies, or
  // the base refusing a host operation issued from the queue) ends the job, since this
  // thread cannot hand it to the caller.
  template <typename Action>
  void Guarded(const CommRequest& handle, Action action);
};

template <typename Action>
void StagingCommunicator::Impl::Guarded(const CommRequest& handle, Action action) {
  try {
    action();
  } catch (const std::exception& error) {
    LOG(ERROR) << "rank " << base->rank() << ": '" << handle.label() << "': " << error.what()
               << "; aborting the job";
    base->Abort(static_cast<int>(ExitCode::kLostRank));
  }
}

CommHandle StagingCommunicator::Impl::NewHandle(const std::string& label, std::size_t bytes) {
  auto handle = std::make_shared<CommRequest>(label, bytes);
  handle->set_wait_hook([waker = waker](int delta) {
    if ((waker->waiting += delta) > 0) waker->Wake();
  });
  return handle;
}

CommHandle StagingCommunicator::Impl::Issue(std::function<CommHandle()> issue,
                                            const std::string& label, std::size_t bytes) {
  std::lock_guard<std::mutex> lock(mutex);
  if (queue.empty()) return issue();
  Entry entry;
  entry.handle = NewHandle(label, bytes);
  entry.issue = std::move(issue);
  CommHandle handle = entry.handle;
  queue.push_back(std::move(entry));
  waker->Wake();
  return handle;
}

CommHandle StagingCommunicator::Impl::Stage(StagedKind kind, void* buffer, std::size_t count,
                                            CommType type, ReduceOp op, int root,
                                            const std::string& label) {
  auto staged = std::make_unique<StagedOp>();
  staged->kind = kind;
  // On the issuing thread: the device work queued so far is what writes the buffer.
  staged->fence = ops->Fence();
  staged->device = static_cast<char*>(buffer);
  staged->count = count;
  staged->type = type;
  staged->op = op;
  staged->root = root;
  staged->chunk_elements = std::max<std::size_t>(1, chunk_bytes / CommTypeSize(type));
  staged->num_chunks = (count + staged->chunk_elements - 1) / staged->chunk_elements;
  Entry entry;
  entry.handle = NewHandle(label, count * CommTypeSize(type));
  entry.staged = std::move(staged);
  CommHandle handle = entry.handle;
  {
    std::lock_guard<std::mutex> lock(mutex);
    queue.push_back(std::move(entry));
  }
  waker->Wake();
  return handle;
}

void* StagingCommunicator::Impl::AcquirePinned() {
  if (!pinned_pool.empty()) {
    void* buffer = pinned_pool.back();
    pinned_pool.pop_back();
    return buffer;
  }
  return ops->AllocatePinned(chunk_bytes);
}

void StagingCommunicator::Impl::IssueChunk(StagedOp& op, const std::string& label) {
  const std::size_t element = CommTypeSize(op.type);
  const std::size_t first = op.next_chunk * op.chunk_elements;
  const std::size_t elements = std::min(op.chunk_elements, op.count - first);
  void* host = nullptr;
  void* buffer = op.device + first * element;
  MemoryKind where = MemoryKind::kDevice;
  if (path == DeviceBufferPath::kStaged) {
    host = AcquirePinned();
    if (op.CopiesIn(base->rank())) ops->CopyToHost(host, buffer, elements * element);
    buffer = host;
    where = MemoryKind::kHost;
  }
  CommHandle request;
  switch (op.kind) {
    case StagedKind::kAllreduce:
      request = base->IAllreduce(buffer, elements, op.type, op.op, where, label);
      break;
    case StagedKind::kReduce:
      request = base->IReduce(buffer, elements, op.type, op.op, op.root, where, label);
      break;
    case StagedKind::kBroadcast:
      request = base->IBroadcast(buffer, elements, op.type, op.root, where, label);
      break;
  }
  op.in_flight.push_back({op.next_chunk, host, request});
  ++op.next_chunk;
  request->OnDone([waker = waker](const CommRequest&) { waker->Wake(); });
}

bool StagingCommunicator::Impl::Pump(StagedOp& op, const std::string& label) {
  bool progressed = false;
  while (true) {
    while (!op.AllIssued() && op.in_flight.size() < 2) {
      IssueChunk(op, label);
      progressed = true;
    }
    if (op.in_flight.empty() || !op.in_flight.front().request->Test()) return progressed;
    const StagedOp::InFlight& front = op.in_flight.front();
    if (front.host == nullptr) {
      op.in_flight.pop_front();
      progressed = true;
      continue;
    }
    if (op.CopiesOut(base->rank())) {
      const std::size_t element = CommTypeSize(op.type);
      const std::size_t first = front.chunk * op.chunk_elements;
      const std::size_t elements = std::min(op.chunk_elements, op.count - first);
      ops->CopyToDevice(op.device + first * element, front.host, elements * element);
    }
    pinned_pool.push_back(front.host);
    op.in_flight.pop_front();
    progressed = true;
  }
}

// Asked without blocking: the thread goes on driving the other operations meanwhile.
bool StagingCommunicator::Impl::FenceReached(StagedOp& op) {
  if (!op.fence_reached) op.fence_reached = op.fence == nullptr || ops->Reached(*op.fence);
  return op.fence_reached;
}

void StagingCommunicator::Impl::CheckFenceTimeout(const StagedOp& op, const CommRequest& handle) {
  const double limit = base->timeout();
  if (limit <= 0 || CommClockSeconds() - op.started <= limit) return;
  LOG(ERROR) << "rank " << base->rank() << ": collective '" << handle.label() << "' ("
             << handle.bytes() << " bytes) did not start within " << limit
             << " s (--comm_timeout): the device work queued before it has not finished. "
                "Aborting the job.";
  base->Abort(static_cast<int>(ExitCode::kLostRank));
}

bool StagingCommunicator::Impl::IssueQueued(bool* fence_pending) {
  bool progressed = false;
  std::unique_lock<std::mutex> lock(mutex);
  while (!queue.empty()) {
    Entry& head = queue.front();
    if (head.issue) {
      CommHandle theirs;
      Guarded(*head.handle, [&] { theirs = head.issue(); });
      CommHandle mine = head.handle;
      forwarded.push_back(theirs);
      queue.pop_front();
      lock.unlock();
      theirs->OnDone([mine](const CommRequest& done) {
        mine->MarkStarted(done.start_time());
        mine->MarkDone(done.end_time());
      });
      progressed = true;
      lock.lock();
      continue;
    }
    // Only this thread issues on the base while the queue holds anything, and the entries
    // of a deque stay where they are when others are added behind them.
    lock.unlock();
    StagedOp& op = *head.staged;
    const CommRequest& handle = *head.handle;
    if (op.started == 0) {
      op.started = CommClockSeconds();
      head.handle->MarkStarted(op.started);
    }
    bool reached = true;
    Guarded(handle, [&] {
      reached = op.num_chunks == 0 || FenceReached(op);
      if (reached) progressed |= Pump(op, handle.label());
    });
    if (!reached) {
      *fence_pending = true;
      CheckFenceTimeout(op, handle);
      return progressed;
    }
    if (!op.AllIssued()) return progressed;
    lock.lock();
    draining.push_back(std::move(queue.front()));
    queue.pop_front();
    progressed = true;
  }
  return progressed;
}

bool StagingCommunicator::Impl::Step(bool* fence_pending) {
  bool progressed = false;
  for (auto it = draining.begin(); it != draining.end();) {
    Guarded(*it->handle, [&] { progressed |= Pump(*it->staged, it->handle->label()); });
    if (it->staged->Done()) {
      it->handle->MarkDone(CommClockSeconds());
      it = draining.erase(it);
      progressed = true;
    } else {
      ++it;
    }
  }
  progressed |= IssueQueued(fence_pending);
  while (!forwarded.empty() && forwarded.front()->Test()) forwarded.pop_front();
  return progressed;
}

CommHandle StagingCommunicator::Impl::OldestInFlight() {
  for (const Entry& entry : draining) {
    if (!entry.staged->in_flight.empty()) return entry.staged->in_flight.front().request;
  }
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (!queue.empty() && queue.front().staged && !queue.front().staged->in_flight.empty()) {
      return queue.front().staged->in_flight.front().request;
    }
  }
  return forwarded.empty() ? nullptr : forwarded.front();
}

void StagingCommunicator::Impl::Rest(bool fence_pending) {
  const bool waited_for = waker->waiting.load() > 0;
  if (waited_for) {
    // A caller is blocked: wait on the base's operation, which makes the base drive it
    // flat out, as it would for the caller itself.
    if (CommHandle oldest = OldestInFlight()) {
      oldest->Wait();
      return;
    }
  }
  std::unique_lock<std::mutex> lock(waker->mutex);
  if (waited_for || fence_pending) {
    // The device work is polled: often while a caller waits, now and then otherwise.
    waker->cv.wait_for(lock, std::chrono::microseconds(waited_for ? 20 : 100),
                       [&] { return waker->woken; });
  } else {
    waker->cv.wait(lock, [&] { return waker->woken; });
  }
  waker->woken = false;
}

void StagingCommunicator::Impl::Run() {
  while (true) {
    bool fence_pending = false;
    const bool progressed = Step(&fence_pending);
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (stop && queue.empty() && draining.empty()) break;
    }
    if (!progressed) Rest(fence_pending);
  }
}

StagingCommunicator::StagingCommunicator(std::shared_ptr<Communicator> base,
                                         std::shared_ptr<DeviceMemoryOps> ops,
                                         std::size_t chunk_bytes, DeviceBufferPath path)
    : base_(std::move(base)), impl_(std::make_unique<Impl>()) {
  DOPPIO_ENSURE(base_ != nullptr && ops != nullptr)
      << "StagingCommunicator: no base or no device memory operations";
  DOPPIO_ENSURE(chunk_bytes > 0) << "staging chunk size must be positive";
  DOPPIO_ENSURE(path == DeviceBufferPath::kStaged || base_->accepts_device_buffers())
      << "StagingCommunicator: device buffers passed directly, but " << base_->description()
      << " does not take device buffers";
  impl_->path = path;
  impl_->base = base_.get();
  impl_->ops = std::move(ops);
  impl_->chunk_bytes = chunk_bytes;
  impl_->thread = std::thread([impl = impl_.get()] { impl->Run(); });
}

StagingCommunicator::~StagingCommunicator() {
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    impl_->stop = true;
  }
  impl_->waker->Wake();
  impl_->thread.join();
  for (void* buffer : impl_->pinned_pool) impl_->ops->FreePinned(buffer);
}

std::string StagingCommunicator::description() const {
  std::ostringstream text;
  if (impl_->path == DeviceBufferPath::kDirect) {
    text << "device buffers passed directly in " << impl_->chunk_bytes / 1024.0 << " KB chunks to "
         << base_->description();
  } else {
    text << "device buffers staged through pinned host memory in " << impl_->chunk_bytes / 1024.0
         << " KB chunks, over " << base_->description();
  }
  return text.str();
}

CommHandle StagingCommunicator::IAllreduce(void* buffer, std::size_t count, CommType type,
                                           ReduceOp op, MemoryKind where,
                                           const std::string& label) {
  if (where == MemoryKind::kDevice) {
    return impl_->Stage(StagedKind::kAllreduce, buffer, count, type, op, 0, label);
  }
  Communicator* base = base_.get();
  return impl_->Issue(
      [=] { return base->IAllreduce(buffer, count, type, op, MemoryKind::kHost, label); }, label,
      count * CommTypeSize(type));
}

CommHandle StagingCommunicator::IReduce(void* buffer, std::size_t count, CommType type, ReduceOp op,
                                        int root, MemoryKind where, const std::string& label) {
  CheckRoot(root, label);
  if (where == MemoryKind::kDevice) {
    return impl_->Stage(StagedKind::kReduce, buffer, count, type, op, root, label);
  }
  Communicator* base = base_.get();
  return impl_->Issue(
      [=] { return base->IReduce(buffer, count, type, op, root, MemoryKind::kHost, label); }, label,
      count * CommTypeSize(type));
}

CommHandle StagingCommunicator::IBroadcast(void* buffer, std::size_t count, CommType type, int root,
                                           MemoryKind where, const std::string& label) {
  CheckRoot(root, label);
  if (where == MemoryKind::kDevice) {
    return impl_->Stage(StagedKind::kBroadcast, buffer, count, type, ReduceOp::kSum, root, label);
  }
  Communicator* base = base_.get();
  return impl_->Issue(
      [=] { return base->IBroadcast(buffer, count, type, root, MemoryKind::kHost, label); }, label,
      count * CommTypeSize(type));
}

CommHandle StagingCommunicator::IAllgather(const void* send, void* recv, std::size_t count,
                                           CommType type, const std::string& label) {
  Communicator* base = base_.get();
  return impl_->Issue([=] { return base->IAllgather(send, recv, count, type, label); }, label,
                      count * CommTypeSize(type) * size());
}

CommHandle StagingCommunicator::IBarrier(const std::string& label) {
  Communicator* base = base_.get();
  return impl_->Issue([=] { return base->IBarrier(label); }, label, 0);
}

CommHandle StagingCommunicator::IGatherv(const void* send, std::size_t bytes, void* recv,
                                         const std::vector<std::size_t>& recv_bytes, int root,
                                         const std::string& label) {
  CheckRoot(root, label);
  Communicator* base = base_.get();
  return impl_->Issue([=] { return base->IGatherv(send, bytes, recv, recv_bytes, root, label); },
                      label, bytes);
}

void StagingCommunicator::Abort(int exit_code) {
  base_->Abort(exit_code);
  // The compiler cannot know that the base's Abort does not return either.
  std::_Exit(exit_code);
}

}  // namespace doppio
