#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "doppio/parallel/communicator.hpp"
#include "mpi_watchdog.hpp"

namespace doppio {

class MpiEngine;

// One operation as the communication thread drives it.
struct MpiOp {
  virtual ~MpiOp() = default;
  CommHandle handle;
  std::uint64_t seq = 0;
  double started = 0;
  // Issues the MPI call(s).
  virtual void Start(MpiEngine& engine) = 0;
  // True once complete.
  virtual bool Progress(MpiEngine& engine) = 0;
};

// The MPI engine: one communication thread owns MPI. It initialises it, starts every
// operation (non-blocking MPI collectives, in the order they were submitted), drives their
// progress while the caller computes, runs the watchdog, and finalises MPI when the engine
// is destroyed. So MPI is only ever entered from one thread (plus MPI_Abort).
class MpiEngine {
 public:
  // Returns once the thread has initialised MPI. Throws Error when MPI is initialised
  // already (it can be once per process).
  MpiEngine();
  // Waits for the operations in flight, then finalises MPI. Every rank must have passed a
  // barrier first: MPI_Finalize would wait forever for a rank that still communicates.
  ~MpiEngine();
  MpiEngine(const MpiEngine&) = delete;
  MpiEngine& operator=(const MpiEngine&) = delete;

  // Queues `op` behind the operations submitted before it and returns its handle.
  CommHandle Submit(std::unique_ptr<MpiOp> op, const std::string& label, std::size_t bytes);
  // Drives the operations in flight soon (see Communicator::Poke).
  void Poke();

  // Written once by the thread before the constructor returns.
  MPI_Comm comm() const { return comm_; }
  int rank() const { return rank_; }
  int size() const { return size_; }
  int local_rank() const { return local_rank_; }
  int local_size() const { return local_size_; }
  int thread_level() const { return thread_level_; }
  const std::string& library() const { return library_; }
  // The allreduce algorithm Open MPI runs ("ring", see mpi_engine.cpp).
  const std::string& allreduce_algorithm() const { return allreduce_algorithm_; }
  // Whether the MPI library reads and writes CUDA device memory itself (Open MPI built with
  // CUDA: MPIX_Query_cuda_support), asked at run time, as the library may differ from the
  // one compiled against.
  bool cuda_aware() const { return cuda_aware_; }

  MpiWatchdog& watchdog() { return *watchdog_; }
  const MpiProgress& progress() const { return progress_; }
  void Check(int code, const std::string& what) const { CheckMpi(code, rank_, what); }

 private:
  void Initialize();
  void Run();
  // Starts the queued operations, in order; true if there were any.
  bool StartQueued();
  // Drives the started ones; true if one completed.
  bool ProgressActive();
  // Lets the thread rest after a round without progress, for as long as fits who waits.
  void Rest(bool progressed);
  void Finalize();

  std::thread thread_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::unique_ptr<MpiOp>> queue_;
  bool stop_ = false;
  bool ready_ = false;
  bool poked_ = false;

  MPI_Comm comm_ = MPI_COMM_NULL;
  MPI_Comm control_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1, local_rank_ = 0, local_size_ = 1;
  int thread_level_ = 0;
  std::string library_;
  std::string allreduce_algorithm_;
  bool cuda_aware_ = false;
  std::unique_ptr<MpiWatchdog> watchdog_;

  // Threads blocked in CommRequest::Wait: while there are any, the thread polls flat out.
  std::atomic<int> waiting_{0};
  MpiProgress progress_;

  // Communication-thread state.
  std::list<std::unique_ptr<MpiOp>> active_;
  int idle_rounds_ = 0;
  double last_progress_ = 0;
};

}  // namespace doppio
