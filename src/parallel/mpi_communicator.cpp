#include "doppio/parallel/mpi_communicator.hpp"

// MPI's C API only (Open MPI's mpi.h would otherwise pull in the removed C++ bindings).
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <glog/logging.h>
#include <mpi.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <list>
#include <sstream>
#include <thread>

#include "doppio/core/common.hpp"

namespace doppio {

namespace {

// The largest element count one MPI call takes (counts are int); longer buffers are split.
constexpr std::size_t kMaxPiece = std::size_t(1) << 30;
// Open MPI's non-blocking reduce and broadcast (coll/libnbc) cut a message into small
// segments and move from one segment to the next by recursion in the thread that progresses
// them, about one level per segment: over TCP, reducing AlexNet's 150 MB fc6 gradient to
// rank 0 overflowed the communication thread's 8 MB stack (SIGSEGV in
// opal_convertor_unpack under thousands of NBC_Progress frames). Pieces of at most 4 MB keep
// that recursion shallow.
constexpr std::size_t kMaxRootedPieceBytes = std::size_t(4) << 20;
constexpr int kQueryTag = 71;
constexpr int kReplyTag = 72;

MPI_Datatype ToMpi(CommType type) {
  switch (type) {
    case CommType::kFloat:
      return MPI_FLOAT;
    case CommType::kDouble:
      return MPI_DOUBLE;
    case CommType::kInt32:
      return MPI_INT32_T;
    case CommType::kInt64:
      return MPI_INT64_T;
    case CommType::kUInt64:
      return MPI_UINT64_T;
    case CommType::kByte:
      return MPI_BYTE;
  }
  return MPI_BYTE;
}

MPI_Op ToMpi(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return MPI_SUM;
    case ReduceOp::kMax:
      return MPI_MAX;
    case ReduceOp::kMin:
      return MPI_MIN;
  }
  return MPI_SUM;
}

std::string MpiErrorString(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  return std::string(text, length);
}

// What a rank answers the watchdog of another: how far it has got.
struct WhereAbouts {
  std::uint64_t issued;
  std::uint64_t completed;
  char last_label[112];
};

[[noreturn]] void AbortJob(int exit_code) {
  google::FlushLogFiles(google::GLOG_INFO);
  std::fflush(nullptr);
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) MPI_Abort(MPI_COMM_WORLD, exit_code);
  std::_Exit(exit_code);
}

}  // namespace

// One operation as the communication thread drives it.
struct PendingOp {
  virtual ~PendingOp() = default;
  CommHandle handle;
  std::uint64_t seq = 0;
  double started = 0;
  // Issues the first MPI call(s).
  virtual void Start(MpiCommunicator::Impl& impl) = 0;
  // True once complete; may issue further calls (the next staged chunk).
  virtual bool Progress(MpiCommunicator::Impl& impl) = 0;
  // Whether every MPI call of this operation has been issued: until then later operations
  // wait, so that every rank issues its collectives in one order.
  virtual bool AllIssued() const { return true; }
};

struct MpiCommunicator::Impl {
  std::thread thread;
  std::mutex mutex;
  std::condition_variable cv;
  std::deque<std::unique_ptr<PendingOp>> queue;
  bool stop = false;
  bool ready = false;
  bool poked = false;

  // Written once by the thread before `ready`.
  MPI_Comm comm = MPI_COMM_NULL;
  MPI_Comm control = MPI_COMM_NULL;
  int rank = 0, size = 1, local_rank = 0, local_size = 1;
  int thread_level = 0;
  std::string library;

  // Threads blocked in CommRequest::Wait: while there are any, the thread polls flat out.
  std::atomic<int> waiting{0};
  std::atomic<std::uint64_t> issued{0};
  std::atomic<std::uint64_t> completed{0};
  std::atomic<double> timeout{0};
  std::mutex label_mutex;
  std::string last_issued_label;

  std::shared_ptr<DeviceMemoryOps> device_ops;
  std::size_t chunk_bytes = 4 << 20;
  std::vector<void*> pinned_pool;

  // Communication-thread state.
  std::list<std::unique_ptr<PendingOp>> active;
  struct Reply {
    WhereAbouts payload;
    MPI_Request request;
  };
  std::list<Reply> replies;

  void Run();
  void Check(int code, const std::string& what);
  CommHandle Submit(std::unique_ptr<PendingOp> op, const std::string& label, std::size_t bytes);
  void ServiceQueries();
  [[noreturn]] void TimedOut(const PendingOp& op);
  void* AcquirePinned();
  void ReleasePinned(void* buffer);
  // Runs a step of `op`; an error from the device copies of the staged path (a CUDA error)
  // ends the job, since this thread cannot hand it to the caller.
  template <typename Step>
  void Guarded(const PendingOp& op, Step step);
};

template <typename Step>
void MpiCommunicator::Impl::Guarded(const PendingOp& op, Step step) {
  try {
    step();
  } catch (const std::exception& error) {
    LOG(ERROR) << "rank " << rank << ": '" << op.handle->label() << "': " << error.what()
               << "; aborting the job";
    AbortJob(1);
  }
}

void MpiCommunicator::Impl::Check(int code, const std::string& what) {
  if (code == MPI_SUCCESS) return;
  LOG(ERROR) << "rank " << rank << ": MPI error in " << what << ": " << MpiErrorString(code)
             << "; aborting the job";
  AbortJob(1);
}

void* MpiCommunicator::Impl::AcquirePinned() {
  if (!pinned_pool.empty()) {
    void* buffer = pinned_pool.back();
    pinned_pool.pop_back();
    return buffer;
  }
  return device_ops->AllocatePinned(chunk_bytes);
}

void MpiCommunicator::Impl::ReleasePinned(void* buffer) { pinned_pool.push_back(buffer); }

namespace {

// A collective on host memory, split into pieces of at most kMaxPiece elements, all issued
// at once.
struct HostOp : PendingOp {
  enum Kind { kAllreduce, kReduce, kBroadcast, kAllgather, kBarrier, kGatherv } kind;
  void* buffer = nullptr;
  const void* send = nullptr;
  std::size_t count = 0;
  CommType type = CommType::kByte;
  ReduceOp op = ReduceOp::kSum;
  int root = 0;
  std::vector<int> recv_counts, displacements;
  std::vector<MPI_Request> requests;

  explicit HostOp(Kind k) : kind(k) {}

  void Start(MpiCommunicator::Impl& impl) override {
    const MPI_Datatype datatype = ToMpi(type);
    const std::size_t element = CommTypeSize(type);
    char* bytes = static_cast<char*>(buffer);
    MPI_Request request;
    switch (kind) {
      case kAllreduce:
      case kReduce:
      case kBroadcast: {
        const std::size_t max_piece =
            kind == kAllreduce ? kMaxPiece
                               : std::max<std::size_t>(1, kMaxRootedPieceBytes / element);
        for (std::size_t offset = 0; offset < count; offset += max_piece) {
          const int piece = static_cast<int>(std::min(max_piece, count - offset));
          void* at = bytes + offset * element;
          if (kind == kAllreduce) {
            impl.Check(
                MPI_Iallreduce(MPI_IN_PLACE, at, piece, datatype, ToMpi(op), impl.comm, &request),
                handle->label());
          } else if (kind == kReduce) {
            const bool is_root = impl.rank == root;
            impl.Check(MPI_Ireduce(is_root ? MPI_IN_PLACE : at, is_root ? at : nullptr, piece,
                                   datatype, ToMpi(op), root, impl.comm, &request),
                       handle->label());
          } else {
            impl.Check(MPI_Ibcast(at, piece, datatype, root, impl.comm, &request), handle->label());
          }
          requests.push_back(request);
        }
        break;
      }
      case kAllgather:
        impl.Check(MPI_Iallgather(send, static_cast<int>(count), datatype, buffer,
                                  static_cast<int>(count), datatype, impl.comm, &request),
                   handle->label());
        requests.push_back(request);
        break;
      case kBarrier:
        impl.Check(MPI_Ibarrier(impl.comm, &request), handle->label());
        requests.push_back(request);
        break;
      case kGatherv:
        impl.Check(MPI_Igatherv(send, static_cast<int>(count), MPI_BYTE, buffer, recv_counts.data(),
                                displacements.data(), MPI_BYTE, root, impl.comm, &request),
                   handle->label());
        requests.push_back(request);
        break;
    }
  }

  bool Progress(MpiCommunicator::Impl& impl) override {
    int done = 0;
    impl.Check(
        MPI_Testall(static_cast<int>(requests.size()), requests.data(), &done, MPI_STATUSES_IGNORE),
        handle->label());
    return done != 0;
  }
};

// A collective on device memory through two pinned host chunks: copy a chunk to the host,
// communicate it while the next one is copied, copy the result back. Nothing is copied
// before the device work queued ahead of the collective (`fence`) has finished: the kernels
// that write a gradient bucket may still be running when backward releases it.
struct StagedOp : PendingOp {
  enum Kind { kAllreduce, kReduce, kBroadcast } kind;
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
  struct InFlight {
    std::size_t chunk;
    void* host;
    MPI_Request request;
  };
  std::deque<InFlight> in_flight;

  explicit StagedOp(Kind k) : kind(k) {}

  bool CopiesIn(int rank) const { return kind != kBroadcast || rank == root; }
  bool CopiesOut(int rank) const {
    return kind == kAllreduce || (kind == kReduce && rank == root) ||
           (kind == kBroadcast && rank != root);
  }

  void IssueNext(MpiCommunicator::Impl& impl) {
    const std::size_t element = CommTypeSize(type);
    const std::size_t first = next_chunk * chunk_elements;
    const std::size_t elements = std::min(chunk_elements, count - first);
    void* host = impl.AcquirePinned();
    if (CopiesIn(impl.rank)) {
      impl.device_ops->CopyToHost(host, device + first * element, elements * element);
    }
    const MPI_Datatype datatype = ToMpi(type);
    const int n = static_cast<int>(elements);
    MPI_Request request;
    if (kind == kAllreduce) {
      impl.Check(MPI_Iallreduce(MPI_IN_PLACE, host, n, datatype, ToMpi(op), impl.comm, &request),
                 handle->label());
    } else if (kind == kReduce) {
      const bool is_root = impl.rank == root;
      impl.Check(MPI_Ireduce(is_root ? MPI_IN_PLACE : host, is_root ? host : nullptr, n, datatype,
                             ToMpi(op), root, impl.comm, &request),
                 handle->label());
    } else {
      impl.Check(MPI_Ibcast(host, n, datatype, root, impl.comm, &request), handle->label());
    }
    in_flight.push_back({next_chunk, host, request});
    ++next_chunk;
  }

  // Whether the device work ahead of the collective has finished (asked without blocking:
  // the thread goes on driving the other operations meanwhile).
  bool FenceReached(MpiCommunicator::Impl& impl) {
    if (!fence_reached) fence_reached = fence == nullptr || impl.device_ops->Reached(*fence);
    return fence_reached;
  }

  void Start(MpiCommunicator::Impl& impl) override {
    chunk_elements = std::max<std::size_t>(1, impl.chunk_bytes / CommTypeSize(type));
    chunk_elements = std::min(chunk_elements, kMaxPiece);
    num_chunks = (count + chunk_elements - 1) / chunk_elements;
    if (num_chunks == 0 || !FenceReached(impl)) return;
    while (next_chunk < num_chunks && in_flight.size() < 2) IssueNext(impl);
  }

  bool Progress(MpiCommunicator::Impl& impl) override {
    if (next_chunk == 0 && num_chunks > 0) {
      if (!FenceReached(impl)) return false;
      while (next_chunk < num_chunks && in_flight.size() < 2) IssueNext(impl);
    }
    while (!in_flight.empty()) {
      InFlight& front = in_flight.front();
      int done = 0;
      impl.Check(MPI_Test(&front.request, &done, MPI_STATUS_IGNORE), handle->label());
      if (!done) return false;
      if (CopiesOut(impl.rank)) {
        const std::size_t element = CommTypeSize(type);
        const std::size_t first = front.chunk * chunk_elements;
        const std::size_t elements = std::min(chunk_elements, count - first);
        impl.device_ops->CopyToDevice(device + first * element, front.host, elements * element);
      }
      impl.ReleasePinned(front.host);
      in_flight.pop_front();
      if (next_chunk < num_chunks) IssueNext(impl);
    }
    return true;
  }

  bool AllIssued() const override { return next_chunk == num_chunks; }
};

}  // namespace

CommHandle MpiCommunicator::Impl::Submit(std::unique_ptr<PendingOp> op, const std::string& label,
                                         std::size_t bytes) {
  op->handle = std::make_shared<CommRequest>(label, bytes);
  op->handle->set_wait_hook([this](int delta) {
    if ((waiting += delta) > 0) cv.notify_one();
  });
  CommHandle handle = op->handle;
  {
    std::lock_guard<std::mutex> lock(mutex);
    op->seq = ++issued;
    {
      std::lock_guard<std::mutex> label_lock(label_mutex);
      last_issued_label = label;
    }
    queue.push_back(std::move(op));
  }
  cv.notify_one();
  return handle;
}

void MpiCommunicator::Impl::ServiceQueries() {
  while (true) {
    int flag = 0;
    MPI_Status status;
    Check(MPI_Iprobe(MPI_ANY_SOURCE, kQueryTag, control, &flag, &status), "watchdog probe");
    if (!flag) break;
    std::uint64_t asked = 0;
    Check(
        MPI_Recv(&asked, 1, MPI_UINT64_T, status.MPI_SOURCE, kQueryTag, control, MPI_STATUS_IGNORE),
        "watchdog query");
    replies.emplace_back();
    Reply& reply = replies.back();
    std::memset(&reply.payload, 0, sizeof(reply.payload));
    reply.payload.issued = issued.load();
    reply.payload.completed = completed.load();
    {
      std::lock_guard<std::mutex> label_lock(label_mutex);
      std::strncpy(reply.payload.last_label, last_issued_label.c_str(),
                   sizeof(reply.payload.last_label) - 1);
    }
    Check(MPI_Isend(&reply.payload, sizeof(WhereAbouts), MPI_BYTE, status.MPI_SOURCE, kReplyTag,
                    control, &reply.request),
          "watchdog reply");
  }
  for (auto it = replies.begin(); it != replies.end();) {
    int done = 0;
    Check(MPI_Test(&it->request, &done, MPI_STATUS_IGNORE), "watchdog reply");
    it = done ? replies.erase(it) : std::next(it);
  }
}

void MpiCommunicator::Impl::TimedOut(const PendingOp& op) {
  const double waited = CommClockSeconds() - op.started;
  LOG(ERROR) << "rank " << rank << ": collective #" << op.seq << " '" << op.handle->label()
             << "' has not completed after " << waited
             << " s (--comm_timeout); asking the other ranks where they are";
  std::vector<std::uint64_t> asked(size, op.seq);
  std::vector<WhereAbouts> answers(size);
  std::vector<MPI_Request> sends, receives(size, MPI_REQUEST_NULL);
  for (int other = 0; other < size; ++other) {
    if (other == rank) continue;
    MPI_Request request;
    Check(MPI_Isend(&asked[other], 1, MPI_UINT64_T, other, kQueryTag, control, &request),
          "watchdog query");
    sends.push_back(request);
    Check(MPI_Irecv(&answers[other], sizeof(WhereAbouts), MPI_BYTE, other, kReplyTag, control,
                    &receives[other]),
          "watchdog answer");
  }
  // A rank whose main thread is stuck still answers from its communication thread; one
  // that does not answer within this window is hung in MPI or gone.
  const double window = std::min(5.0, std::max(1.0, timeout.load()));
  const double deadline = CommClockSeconds() + window;
  std::vector<bool> answered(size, false);
  answered[rank] = true;
  while (CommClockSeconds() < deadline) {
    bool all = true;
    for (int other = 0; other < size; ++other) {
      if (answered[other]) continue;
      int done = 0;
      Check(MPI_Test(&receives[other], &done, MPI_STATUS_IGNORE), "watchdog answer");
      if (done) {
        answered[other] = true;
      } else {
        all = false;
      }
    }
    if (all) break;
    ServiceQueries();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  std::ostringstream missing, details;
  int num_missing = 0;
  for (int other = 0; other < size; ++other) {
    if (other == rank) continue;
    if (!answered[other]) {
      missing << (num_missing++ ? ", " : "") << other;
      details << "; rank " << other << " did not answer (hung inside MPI, or dead)";
    } else if (answers[other].issued < op.seq) {
      missing << (num_missing++ ? ", " : "") << other;
      details << "; rank " << other << " is at collective #" << answers[other].issued << " '"
              << answers[other].last_label << "'";
    }
  }
  std::ostringstream message;
  message << "rank " << rank << ": collective #" << op.seq << " '" << op.handle->label() << "' ("
          << op.handle->bytes() << " bytes) did not complete within " << timeout.load()
          << " s (--comm_timeout): ";
  if (num_missing > 0) {
    message << "rank" << (num_missing > 1 ? "s " : " ") << missing.str() << " did not arrive"
            << details.str();
  } else {
    message << "every rank has issued it, so the network or MPI itself is stuck";
  }
  message << ". Aborting the job.";
  LOG(ERROR) << message.str();
  AbortJob(1);
}

void MpiCommunicator::Impl::Run() {
  int provided = 0;
  MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  MPI_Comm_dup(MPI_COMM_WORLD, &control);
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  MPI_Comm_set_errhandler(control, MPI_ERRORS_RETURN);
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  MPI_Comm node;
  MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
  MPI_Comm_rank(node, &local_rank);
  MPI_Comm_size(node, &local_size);
  MPI_Comm_free(&node);
  char version[MPI_MAX_LIBRARY_VERSION_STRING];
  int length = 0;
  MPI_Get_library_version(version, &length);
  library.assign(version, length);
  library = library.substr(0, library.find_first_of(",\n"));
  thread_level = provided;
  {
    std::lock_guard<std::mutex> lock(mutex);
    ready = true;
  }
  cv.notify_all();

  int idle_rounds = 0;
  double last_progress = 0;
  while (true) {
    {
      std::unique_lock<std::mutex> lock(mutex);
      if (active.empty() && queue.empty() && !stop) {
        // Idle: wake now and then to answer other ranks' watchdogs.
        cv.wait_for(lock, std::chrono::milliseconds(5));
      }
      if (stop && queue.empty() && active.empty()) break;
    }
    bool progressed = false;
    // Start queued operations in order, behind any that has not issued all its calls.
    while (true) {
      std::unique_ptr<PendingOp> op;
      {
        std::lock_guard<std::mutex> lock(mutex);
        if (queue.empty()) break;
        if (!active.empty() && !active.back()->AllIssued()) break;
        op = std::move(queue.front());
        queue.pop_front();
      }
      op->started = CommClockSeconds();
      op->handle->MarkStarted(op->started);
      Guarded(*op, [&] { op->Start(*this); });
      active.push_back(std::move(op));
      progressed = true;
    }
    for (auto it = active.begin(); it != active.end();) {
      bool done = false;
      Guarded(**it, [&] { done = (*it)->Progress(*this); });
      if (done) {
        // Counted before the waiter wakes: once Wait returns, nothing is in flight for it.
        ++completed;
        (*it)->handle->MarkDone(CommClockSeconds());
        it = active.erase(it);
        progressed = true;
      } else {
        ++it;
      }
    }
    ServiceQueries();
    const double limit = timeout.load();
    if (limit > 0 && !active.empty() && CommClockSeconds() - active.front()->started > limit) {
      TimedOut(*active.front());
    }
    if (progressed) {
      idle_rounds = 0;
      last_progress = CommClockSeconds();
    } else if (waiting.load() > 0) {
      // Someone is blocked on the result: poll again at once; after a while without
      // progress let other runnable threads (of an oversubscribed machine: the peer rank
      // may need this core) go first.
      idle_rounds = 0;
      if (CommClockSeconds() - last_progress > 200e-6) sched_yield();
    } else if (!active.empty()) {
      // The caller computes meanwhile: poll now and then (and whenever it pokes between
      // layers), so that this thread does not take the core from the computation.
      ++idle_rounds;
      if (idle_rounds < 4) {
        sched_yield();
      } else {
        std::unique_lock<std::mutex> lock(mutex);
        if (queue.empty() && waiting.load() == 0 && !poked) {
          cv.wait_for(lock, std::chrono::microseconds(std::min(100, 10 * idle_rounds)));
        }
        poked = false;
      }
    }
  }
  // Every rank has passed the shutdown barrier: no query can come any more.
  for (Reply& reply : replies) MPI_Wait(&reply.request, MPI_STATUS_IGNORE);
  replies.clear();
  if (device_ops) {
    for (void* buffer : pinned_pool) device_ops->FreePinned(buffer);
  }
  pinned_pool.clear();
  MPI_Comm_free(&control);
  MPI_Comm_free(&comm);
  MPI_Finalize();
}

MpiCommunicator::MpiCommunicator() : impl_(std::make_unique<Impl>()) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  DOPPIO_ENSURE(!initialized) << "MPI is already initialised in this process: only one "
                                 "MpiCommunicator may exist";
  impl_->thread = std::thread([impl = impl_.get()] { impl->Run(); });
  std::unique_lock<std::mutex> lock(impl_->mutex);
  impl_->cv.wait(lock, [this] { return impl_->ready; });
  CHECK_GE(impl_->thread_level, MPI_THREAD_FUNNELED)
      << "MPI provides no thread support; Doppio's communication thread needs at least "
         "MPI_THREAD_FUNNELED";
}

MpiCommunicator::~MpiCommunicator() {
  // A barrier under the watchdog first: MPI_Finalize would wait forever for a rank that is
  // still training.
  IBarrier("shutdown")->Wait();
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    impl_->stop = true;
  }
  impl_->cv.notify_all();
  impl_->thread.join();
}

bool MpiCommunicator::LaunchedByMpi() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMI_RANK", "PMIX_RANK",
                           "MPI_LOCALNRANKS", "MV2_COMM_WORLD_SIZE"}) {
    if (std::getenv(name) != nullptr) return true;
  }
  return false;
}

int MpiCommunicator::rank() const { return impl_->rank; }
int MpiCommunicator::size() const { return impl_->size; }
int MpiCommunicator::local_rank() const { return impl_->local_rank; }
int MpiCommunicator::local_size() const { return impl_->local_size; }
std::uint64_t MpiCommunicator::issued() const { return impl_->issued.load(); }

std::string MpiCommunicator::description() const {
  std::ostringstream text;
  text << "MPI (" << impl_->library << ", thread level "
       << (impl_->thread_level == MPI_THREAD_MULTIPLE     ? "multiple"
           : impl_->thread_level == MPI_THREAD_SERIALIZED ? "serialized"
                                                          : "funneled")
       << "), " << impl_->size << " rank" << (impl_->size == 1 ? "" : "s") << ", "
       << impl_->local_size << " on this node";
  return text.str();
}

namespace {

void CheckRoot(int root, int size, const std::string& label) {
  DOPPIO_ENSURE(root >= 0 && root < size)
      << label << ": root rank " << root << " does not exist (" << size << " ranks)";
}

}  // namespace

CommHandle MpiCommunicator::IAllreduce(void* buffer, std::size_t count, CommType type, ReduceOp op,
                                       MemoryKind where, const std::string& label) {
  if (where == MemoryKind::kDevice) {
    DOPPIO_ENSURE(impl_->device_ops != nullptr)
        << label << ": a device buffer, but this build has no device memory support";
    auto staged = std::make_unique<StagedOp>(StagedOp::kAllreduce);
    staged->fence = impl_->device_ops->Fence();
    staged->device = static_cast<char*>(buffer);
    staged->count = count;
    staged->type = type;
    staged->op = op;
    return impl_->Submit(std::move(staged), label, count * CommTypeSize(type));
  }
  auto host = std::make_unique<HostOp>(HostOp::kAllreduce);
  host->buffer = buffer;
  host->count = count;
  host->type = type;
  host->op = op;
  return impl_->Submit(std::move(host), label, count * CommTypeSize(type));
}

CommHandle MpiCommunicator::IReduce(void* buffer, std::size_t count, CommType type, ReduceOp op,
                                    int root, MemoryKind where, const std::string& label) {
  CheckRoot(root, size(), label);
  if (where == MemoryKind::kDevice) {
    DOPPIO_ENSURE(impl_->device_ops != nullptr)
        << label << ": a device buffer, but this build has no device memory support";
    auto staged = std::make_unique<StagedOp>(StagedOp::kReduce);
    staged->fence = impl_->device_ops->Fence();
    staged->device = static_cast<char*>(buffer);
    staged->count = count;
    staged->type = type;
    staged->op = op;
    staged->root = root;
    return impl_->Submit(std::move(staged), label, count * CommTypeSize(type));
  }
  auto host = std::make_unique<HostOp>(HostOp::kReduce);
  host->buffer = buffer;
  host->count = count;
  host->type = type;
  host->op = op;
  host->root = root;
  return impl_->Submit(std::move(host), label, count * CommTypeSize(type));
}

CommHandle MpiCommunicator::IBroadcast(void* buffer, std::size_t count, CommType type, int root,
                                       MemoryKind where, const std::string& label) {
  CheckRoot(root, size(), label);
  if (where == MemoryKind::kDevice) {
    DOPPIO_ENSURE(impl_->device_ops != nullptr)
        << label << ": a device buffer, but this build has no device memory support";
    auto staged = std::make_unique<StagedOp>(StagedOp::kBroadcast);
    staged->fence = impl_->device_ops->Fence();
    staged->device = static_cast<char*>(buffer);
    staged->count = count;
    staged->type = type;
    staged->root = root;
    return impl_->Submit(std::move(staged), label, count * CommTypeSize(type));
  }
  auto host = std::make_unique<HostOp>(HostOp::kBroadcast);
  host->buffer = buffer;
  host->count = count;
  host->type = type;
  host->root = root;
  return impl_->Submit(std::move(host), label, count * CommTypeSize(type));
}

CommHandle MpiCommunicator::IAllgather(const void* send, void* recv, std::size_t count,
                                       CommType type, const std::string& label) {
  DOPPIO_ENSURE(count <= static_cast<std::size_t>(INT_MAX))
      << label << ": " << count << " elements per rank is more than one allgather takes";
  auto host = std::make_unique<HostOp>(HostOp::kAllgather);
  host->send = send;
  host->buffer = recv;
  host->count = count;
  host->type = type;
  return impl_->Submit(std::move(host), label, count * CommTypeSize(type) * size());
}

CommHandle MpiCommunicator::IBarrier(const std::string& label) {
  return impl_->Submit(std::make_unique<HostOp>(HostOp::kBarrier), label, 0);
}

CommHandle MpiCommunicator::IGatherv(const void* send, std::size_t bytes, void* recv,
                                     const std::vector<std::size_t>& recv_bytes, int root,
                                     const std::string& label) {
  CheckRoot(root, size(), label);
  auto host = std::make_unique<HostOp>(HostOp::kGatherv);
  host->send = send;
  host->buffer = recv;
  host->count = bytes;
  host->type = CommType::kByte;
  host->root = root;
  std::size_t total = 0;
  if (rank() == root) {
    DOPPIO_ENSURE(static_cast<int>(recv_bytes.size()) == size())
        << label << ": " << recv_bytes.size() << " receive sizes for " << size() << " ranks";
    for (std::size_t part : recv_bytes) {
      DOPPIO_ENSURE(total + part <= static_cast<std::size_t>(INT_MAX))
          << label << ": more than 2 GiB gathered";
      host->recv_counts.push_back(static_cast<int>(part));
      host->displacements.push_back(static_cast<int>(total));
      total += part;
    }
  }
  DOPPIO_ENSURE(bytes <= static_cast<std::size_t>(INT_MAX))
      << label << ": more than 2 GiB from one rank";
  return impl_->Submit(std::move(host), label, bytes);
}

void MpiCommunicator::Poke() {
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    impl_->poked = true;
  }
  impl_->cv.notify_one();
}

void MpiCommunicator::set_timeout(double seconds) {
  DOPPIO_ENSURE(seconds >= 0) << "communication timeout must be >= 0 seconds, not " << seconds;
  impl_->timeout = seconds;
}

double MpiCommunicator::timeout() const { return impl_->timeout.load(); }

void MpiCommunicator::set_device_memory_ops(std::shared_ptr<DeviceMemoryOps> ops,
                                            std::size_t chunk_bytes) {
  DOPPIO_ENSURE(chunk_bytes > 0) << "staging chunk size must be positive";
  // Taken under the queue lock: the thread reads these only while starting operations.
  std::lock_guard<std::mutex> lock(impl_->mutex);
  DOPPIO_ENSURE(impl_->issued.load() == impl_->completed.load())
      << "device memory operations can only be changed while no operation is in flight";
  if (impl_->device_ops) {
    for (void* buffer : impl_->pinned_pool) impl_->device_ops->FreePinned(buffer);
  }
  impl_->pinned_pool.clear();
  impl_->device_ops = std::move(ops);
  impl_->chunk_bytes = chunk_bytes;
}

void MpiCommunicator::Abort(int exit_code) { AbortJob(exit_code); }

}  // namespace doppio
