#include "mpi_engine.hpp"

#include <glog/logging.h>
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>

// Open MPI's extensions: MPIX_CUDA_AWARE_SUPPORT and MPIX_Query_cuda_support.
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>
#endif

#include "doppio/core/common.hpp"

namespace doppio {

MpiEngine::MpiEngine() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  DOPPIO_ENSURE(!initialized) << "MPI is already initialised in this process: only one "
                                 "MpiCommunicator may exist";
  thread_ = std::thread([this] { Run(); });
  std::unique_lock<std::mutex> lock(mutex_);
  cv_.wait(lock, [this] { return ready_; });
  CHECK_GE(thread_level_, MPI_THREAD_FUNNELED)
      << "MPI provides no thread support; Doppio's communication thread needs at least "
         "MPI_THREAD_FUNNELED";
}

MpiEngine::~MpiEngine() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

CommHandle MpiEngine::Submit(std::unique_ptr<MpiOp> op, const std::string& label,
                             std::size_t bytes) {
  op->handle = std::make_shared<CommRequest>(label, bytes);
  op->handle->set_wait_hook([this](int delta) {
    if ((waiting_ += delta) > 0) cv_.notify_one();
  });
  CommHandle handle = op->handle;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    op->seq = progress_.Issue(label);
    queue_.push_back(std::move(op));
  }
  cv_.notify_one();
  return handle;
}

void MpiEngine::Poke() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    poked_ = true;
  }
  cv_.notify_one();
}

namespace {

// Open MPI's choice of algorithm for MPI_Iallreduce (coll/libnbc; MPI_Allreduce's
// coll_tuned_* parameters do not apply to the non-blocking collectives).
constexpr char kIallreduceAlgorithm[] = "OMPI_MCA_coll_libnbc_iallreduce_algorithm";

// Open MPI 4.1's libnbc runs every in-place MPI_Iallreduce as a binomial tree: a reduce to rank
// 0, then a broadcast from it, the whole buffer at every step. On 2 ranks that sends each
// bucket twice, one way after the other (half the link rate); on 4, five bucket-times against
// the 1.5 of a bandwidth-optimal allreduce. Its ring (a reduce-scatter, then an allgather, of
// N segments, every rank sending and receiving at once) moves 2(N-1)/N of the bucket per link
// and direction. Every segment's sum is formed on one rank and copied to the others, so all
// ranks hold the same bits, the same from run to run. A value set by the user (mpirun --mca,
// the environment) is kept.
void ChooseAllreduceAlgorithm() { setenv(kIallreduceAlgorithm, "1", /*overwrite=*/0); }

// Open MPI's TCP transport hands a large message to the kernel in fragments of
// btl_tcp_max_send_size (128 KB), at most pml_ob1_send_pipeline_depth (3) of them at a
// time, and queues the next ones only when this thread progresses MPI: a rank that loses its
// core for a few milliseconds (the ranks share cores with each other and with whatever else
// runs) leaves its link idle once 384 KB have drained, 3 ms at 1 Gbit/s. On the namespace
// cluster 16 MB allreduces reached 68 to 77% of the link in the median, 89 and 80% at best
// (2 and 4 hosts, load average 12 to 14). Fragments of 1 MB, 8 in flight each way, keep up
// to 8 MB in the socket, which drains at the link's rate without this thread: 93 and 85% in
// the median, 97 and 85% at best, in the same run (bench/README.md). User values win.
void ChooseTcpFragments() {
  setenv("OMPI_MCA_btl_tcp_max_send_size", "1048576", /*overwrite=*/0);
  setenv("OMPI_MCA_pml_ob1_send_pipeline_depth", "8", /*overwrite=*/0);
  setenv("OMPI_MCA_pml_ob1_recv_pipeline_depth", "8", /*overwrite=*/0);
}

std::string AllreduceAlgorithmName() {
  const char* value = std::getenv(kIallreduceAlgorithm);
  const std::string algorithm = value ? value : "0";
  if (algorithm == "1" || algorithm == "ring") return "ring";
  if (algorithm == "0" || algorithm == "ignore") return "Open MPI's choice";
  return "coll_libnbc_iallreduce_algorithm " + algorithm;
}

}  // namespace

void MpiEngine::Initialize() {
  ChooseAllreduceAlgorithm();
  ChooseTcpFragments();
  int provided = 0;
  MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_dup(MPI_COMM_WORLD, &comm_);
  MPI_Comm_dup(MPI_COMM_WORLD, &control_);
  MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
  MPI_Comm_set_errhandler(control_, MPI_ERRORS_RETURN);
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
  MPI_Comm node;
  MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node);
  MPI_Comm_rank(node, &local_rank_);
  MPI_Comm_size(node, &local_size_);
  MPI_Comm_free(&node);
  char version[MPI_MAX_LIBRARY_VERSION_STRING];
  int length = 0;
  MPI_Get_library_version(version, &length);
  library_.assign(version, length);
  library_ = library_.substr(0, library_.find_first_of(",\n"));
  allreduce_algorithm_ = AllreduceAlgorithmName();
  thread_level_ = provided;
#if defined(MPIX_CUDA_AWARE_SUPPORT)
  cuda_aware_ = MPIX_Query_cuda_support() == 1;
#endif
  watchdog_ = std::make_unique<MpiWatchdog>(control_, rank_, size_, progress_);
}

void MpiEngine::Run() {
  Initialize();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ready_ = true;
  }
  cv_.notify_all();

  while (true) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      if (active_.empty() && queue_.empty() && !stop_) {
        // Idle: wake now and then to answer other ranks' watchdogs.
        cv_.wait_for(lock, std::chrono::milliseconds(5));
      }
      if (stop_ && queue_.empty() && active_.empty()) break;
    }
    const bool started = StartQueued();
    const bool completed = ProgressActive();
    watchdog_->ServiceQueries();
    if (!active_.empty()) {
      const MpiOp& oldest = *active_.front();
      watchdog_->Check(oldest.seq, *oldest.handle, oldest.started);
    }
    Rest(started || completed);
  }
  Finalize();
}

bool MpiEngine::StartQueued() {
  bool any = false;
  while (true) {
    std::unique_ptr<MpiOp> op;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (queue_.empty()) break;
      op = std::move(queue_.front());
      queue_.pop_front();
    }
    op->started = CommClockSeconds();
    op->handle->MarkStarted(op->started);
    op->Start(*this);
    active_.push_back(std::move(op));
    any = true;
  }
  return any;
}

bool MpiEngine::ProgressActive() {
  bool any = false;
  for (auto it = active_.begin(); it != active_.end();) {
    if ((*it)->Progress(*this)) {
      // Counted before the waiter wakes: once Wait returns, nothing is in flight for it.
      progress_.Complete();
      (*it)->handle->MarkDone(CommClockSeconds());
      it = active_.erase(it);
      any = true;
    } else {
      ++it;
    }
  }
  return any;
}

void MpiEngine::Rest(bool progressed) {
  if (progressed) {
    idle_rounds_ = 0;
    last_progress_ = CommClockSeconds();
  } else if (waiting_.load() > 0) {
    // Someone is blocked on the result: poll again at once; after a while without
    // progress let other runnable threads (of an oversubscribed machine: the peer rank
    // may need this core) go first.
    idle_rounds_ = 0;
    if (CommClockSeconds() - last_progress_ > 200e-6) sched_yield();
  } else if (!active_.empty()) {
    // The caller computes meanwhile: poll now and then (and whenever it pokes between
    // layers), so that this thread does not take the core from the computation.
    ++idle_rounds_;
    if (idle_rounds_ < 4) {
      sched_yield();
    } else {
      std::unique_lock<std::mutex> lock(mutex_);
      if (queue_.empty() && waiting_.load() == 0 && !poked_) {
        cv_.wait_for(lock, std::chrono::microseconds(std::min(100, 10 * idle_rounds_)));
      }
      poked_ = false;
    }
  }
}

void MpiEngine::Finalize() {
  // Every rank has passed the shutdown barrier: no query can come any more.
  watchdog_->Finish();
  MPI_Comm_free(&control_);
  MPI_Comm_free(&comm_);
  MPI_Finalize();
}

}  // namespace doppio
