#include "mpi_watchdog.hpp"

#include <glog/logging.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <thread>
#include <vector>

#include "doppio/core/common.hpp"

namespace doppio {

namespace {

constexpr int kQueryTag = 71;
constexpr int kReplyTag = 72;

std::string MpiErrorString(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  return std::string(text, length);
}

}  // namespace

void AbortJob(int exit_code) {
  google::FlushLogFiles(google::GLOG_INFO);
  std::fflush(nullptr);
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) MPI_Abort(MPI_COMM_WORLD, exit_code);
  std::_Exit(exit_code);
}

void CheckMpi(int code, int rank, const std::string& what) {
  if (code == MPI_SUCCESS) return;
  LOG(ERROR) << "rank " << rank << ": MPI error in " << what << ": " << MpiErrorString(code)
             << "; aborting the job";
  AbortJob(static_cast<int>(ExitCode::kLostRank));
}

std::uint64_t MpiProgress::Issue(const std::string& label) {
  const std::uint64_t seq = ++issued_;
  std::lock_guard<std::mutex> lock(label_mutex_);
  last_label_ = label;
  return seq;
}

std::string MpiProgress::last_label() const {
  std::lock_guard<std::mutex> lock(label_mutex_);
  return last_label_;
}

void MpiWatchdog::set_timeout(double seconds) {
  DOPPIO_ENSURE(seconds >= 0) << "communication timeout must be >= 0 seconds, not " << seconds;
  timeout_ = seconds;
}

void MpiWatchdog::ServiceQueries() {
  while (true) {
    int flag = 0;
    MPI_Status status;
    CheckMpi(MPI_Iprobe(MPI_ANY_SOURCE, kQueryTag, control_, &flag, &status), rank_,
             "watchdog probe");
    if (!flag) break;
    std::uint64_t asked = 0;
    CheckMpi(MPI_Recv(&asked, 1, MPI_UINT64_T, status.MPI_SOURCE, kQueryTag, control_,
                      MPI_STATUS_IGNORE),
             rank_, "watchdog query");
    replies_.emplace_back();
    Reply& reply = replies_.back();
    std::memset(&reply.payload, 0, sizeof(reply.payload));
    reply.payload.issued = progress_.issued();
    reply.payload.completed = progress_.completed();
    std::strncpy(reply.payload.last_label, progress_.last_label().c_str(),
                 sizeof(reply.payload.last_label) - 1);
    CheckMpi(MPI_Isend(&reply.payload, sizeof(WhereAbouts), MPI_BYTE, status.MPI_SOURCE, kReplyTag,
                       control_, &reply.request),
             rank_, "watchdog reply");
  }
  for (auto it = replies_.begin(); it != replies_.end();) {
    int done = 0;
    CheckMpi(MPI_Test(&it->request, &done, MPI_STATUS_IGNORE), rank_, "watchdog reply");
    it = done ? replies_.erase(it) : std::next(it);
  }
}

void MpiWatchdog::Check(std::uint64_t seq, const CommRequest& handle, double started) {
  const double limit = timeout_.load();
  if (limit > 0 && CommClockSeconds() - started > limit) TimedOut(seq, handle, started);
}

void MpiWatchdog::Finish() {
  for (Reply& reply : replies_) MPI_Wait(&reply.request, MPI_STATUS_IGNORE);
  replies_.clear();
}

void MpiWatchdog::TimedOut(std::uint64_t seq, const CommRequest& handle, double started) {
  const double waited = CommClockSeconds() - started;
  LOG(ERROR) << "rank " << rank_ << ": collective #" << seq << " '" << handle.label()
             << "' has not completed after " << waited
             << " s (--comm_timeout); asking the other ranks where they are";
  std::vector<std::uint64_t> asked(size_, seq);
  std::vector<WhereAbouts> answers(size_);
  std::vector<MPI_Request> sends, receives(size_, MPI_REQUEST_NULL);
  for (int other = 0; other < size_; ++other) {
    if (other == rank_) continue;
    MPI_Request request;
    CheckMpi(MPI_Isend(&asked[other], 1, MPI_UINT64_T, other, kQueryTag, control_, &request), rank_,
             "watchdog query");
    sends.push_back(request);
    CheckMpi(MPI_Irecv(&answers[other], sizeof(WhereAbouts), MPI_BYTE, other, kReplyTag, control_,
                       &receives[other]),
             rank_, "watchdog answer");
  }
  // A rank whose main thread is stuck still answers from its communication thread; one
  // that does not answer within this window is hung in MPI or gone.
  const double window = std::min(5.0, std::max(1.0, timeout_.load()));
  const double deadline = CommClockSeconds() + window;
  std::vector<bool> answered(size_, false);
  answered[rank_] = true;
  while (CommClockSeconds() < deadline) {
    bool all = true;
    for (int other = 0; other < size_; ++other) {
      if (answered[other]) continue;
      int done = 0;
      CheckMpi(MPI_Test(&receives[other], &done, MPI_STATUS_IGNORE), rank_, "watchdog answer");
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
  for (int other = 0; other < size_; ++other) {
    if (other == rank_) continue;
    if (!answered[other]) {
      missing << (num_missing++ ? ", " : "") << other;
      details << "; rank " << other << " did not answer (hung inside MPI, or dead)";
    } else if (answers[other].issued < seq) {
      missing << (num_missing++ ? ", " : "") << other;
      details << "; rank " << other << " is at collective #" << answers[other].issued << " '"
              << answers[other].last_label << "'";
    }
  }
  std::ostringstream message;
  message << "rank " << rank_ << ": collective #" << seq << " '" << handle.label() << "' ("
          << handle.bytes() << " bytes) did not complete within " << timeout_.load()
          << " s (--comm_timeout): ";
  if (num_missing > 0) {
    message << "rank" << (num_missing > 1 ? "s " : " ") << missing.str() << " did not arrive"
            << details.str();
  } else {
    message << "every rank has issued it, so the network or MPI itself is stuck";
  }
  message << ". Aborting the job.";
  LOG(ERROR) << message.str();
  AbortJob(static_cast<int>(ExitCode::kLostRank));
}

}  // namespace doppio
