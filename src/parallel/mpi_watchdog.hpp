#pragma once

// MPI's C API only (Open MPI's mpi.h would otherwise pull in the removed C++ bindings).
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <atomic>
#include <cstdint>
#include <list>
#include <mutex>
#include <string>

#include "doppio/parallel/communicator.hpp"

namespace doppio {

// Ends the whole job at once (every rank), after the reason was logged. Never returns.
[[noreturn]] void AbortJob(int exit_code);

// An MPI call that failed ends the job: the communication thread cannot hand the error to
// the caller, and a rank that left a collective would hang the others.
void CheckMpi(int code, int rank, const std::string& what);

// How far this rank has got in the sequence of collectives, what its watchdog answers
// another rank's. Written by the issuing threads and the communication thread.
class MpiProgress {
 public:
  // Counts an operation issued and returns its sequence number.
  std::uint64_t Issue(const std::string& label);
  void Complete() { ++completed_; }
  std::uint64_t issued() const { return issued_.load(); }
  std::uint64_t completed() const { return completed_.load(); }
  std::string last_label() const;

 private:
  std::atomic<std::uint64_t> issued_{0};
  std::atomic<std::uint64_t> completed_{0};
  mutable std::mutex label_mutex_;
  std::string last_label_;
};

// The watchdog of the communication thread: an operation that has not completed `timeout`
// seconds after it started makes this rank ask every other rank (on `control`, a
// communicator of its own) which collective it has reached; the ranks that have not issued
// the stalled one are named in the error, and the job is aborted. Every rank answers such
// questions from its communication thread, so one whose caller is stuck still answers.
// Used by the communication thread only, but for the timeout.
class MpiWatchdog {
 public:
  MpiWatchdog(MPI_Comm control, int rank, int size, const MpiProgress& progress)
      : control_(control), rank_(rank), size_(size), progress_(progress) {}
  MpiWatchdog(const MpiWatchdog&) = delete;
  MpiWatchdog& operator=(const MpiWatchdog&) = delete;

  void set_timeout(double seconds);
  double timeout() const { return timeout_.load(); }

  // Answers the questions of the other ranks' watchdogs; called on every round of the
  // progress loop, busy or idle.
  void ServiceQueries();
  // Aborts the job, naming the ranks that did not arrive, when collective #seq, which
  // started at `started`, has taken longer than the timeout.
  void Check(std::uint64_t seq, const CommRequest& handle, double started);
  // Waits until the answers in flight have been sent; once every rank has passed the
  // shutdown barrier no question can come any more.
  void Finish();

 private:
  [[noreturn]] void TimedOut(std::uint64_t seq, const CommRequest& handle, double started);

  // What a rank answers the watchdog of another: how far it has got.
  struct WhereAbouts {
    std::uint64_t issued;
    std::uint64_t completed;
    char last_label[112];
  };
  struct Reply {
    WhereAbouts payload;
    MPI_Request request;
  };

  MPI_Comm control_;
  int rank_;
  int size_;
  const MpiProgress& progress_;
  std::atomic<double> timeout_{0};
  std::list<Reply> replies_;
};

}  // namespace doppio
