#include "doppio/util/thread_pool.hpp"

#include <glog/logging.h>

#include <algorithm>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace doppio {

namespace {

thread_local ThreadPool* current_pool = nullptr;
// True while the thread runs a part: work it splits further runs serially.
thread_local bool in_part = false;

// The p-th of `parts` near-equal contiguous ranges of [0, n).
inline void PartRange(int n, int parts, int p, int* begin, int* end) {
  *begin = static_cast<int>(static_cast<std::int64_t>(n) * p / parts);
  *end = static_cast<int>(static_cast<std::int64_t>(n) * (p + 1) / parts);
}

class InPart {
 public:
  InPart() : previous_(in_part) { in_part = true; }
  ~InPart() { in_part = previous_; }

 private:
  bool previous_;
};

}  // namespace

ThreadPool::ThreadPool(int threads) : threads_(threads) {
  CHECK_GE(threads, 1) << "a thread pool needs at least one thread";
#ifndef _OPENMP
  workers_.reserve(threads - 1);
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this, i] { Work(i); });
#endif
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    quit_ = true;
  }
  start_.notify_all();
  for (auto& worker : workers_) worker.join();
}

void ThreadPool::Work(int index) {
  std::uint64_t seen = 0;
  for (;;) {
    const std::function<void(int, int, int)>* fn;
    int n, parts;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      start_.wait(lock, [&] { return quit_ || generation_ != seen; });
      if (quit_) return;
      seen = generation_;
      fn = fn_;
      n = n_;
      parts = parts_;
    }
    if (index >= parts) continue;  // not needed this run
    std::exception_ptr error;
    try {
      InPart guard;
      int begin, end;
      PartRange(n, parts, index, &begin, &end);
      (*fn)(begin, end, index);
    } catch (...) {
      error = std::current_exception();
    }
    std::lock_guard<std::mutex> lock(mutex_);
    if (error && !error_) error_ = error;
    if (--pending_ == 0) done_.notify_one();
  }
}

void ThreadPool::Run(int n, int parts, const std::function<void(int, int, int)>& fn) {
  CHECK(parts >= 1 && parts <= threads())
      << "parts " << parts << " for " << threads() << " threads";
  if (parts == 1 || in_part) {
    InPart guard;
    fn(0, n, 0);
    return;
  }
  std::lock_guard<std::mutex> run_lock(run_mutex_);
#ifdef _OPENMP
  RunOnOpenmp(n, parts, fn);
#else
  {
    std::lock_guard<std::mutex> lock(mutex_);
    fn_ = &fn;
    n_ = n;
    parts_ = parts;
    pending_ = parts - 1;
    error_ = nullptr;
    ++generation_;
  }
  start_.notify_all();
  std::exception_ptr error;
  try {
    InPart guard;
    int begin, end;
    PartRange(n, parts, 0, &begin, &end);
    fn(begin, end, 0);
  } catch (...) {
    error = std::current_exception();
  }
  std::unique_lock<std::mutex> lock(mutex_);
  done_.wait(lock, [&] { return pending_ == 0; });
  fn_ = nullptr;
  if (!error) error = error_;
  error_ = nullptr;
  lock.unlock();
  if (error) std::rethrow_exception(error);
#endif
}

#ifdef _OPENMP
// A build with oneDNN links OpenMP, on whose threads oneDNN's primitives run; an OpenMP thread
// spins for a while after each parallel region before it sleeps. Workers of our own would find
// the second core taken by it whenever a layer on this pool follows a oneDNN one (GoogLeNet
// batch 8, 2 threads: the CAFFE LRN layers took as long as on one thread, 1.02x, and 1.91x
// with OMP_WAIT_POLICY=PASSIVE). So the parts run on the same OpenMP threads: one pool.
// Part p still runs the p-th range (a team smaller than asked for takes several parts in
// turn), part 0 on the calling thread, the team's master.
void ThreadPool::RunOnOpenmp(int n, int parts, const std::function<void(int, int, int)>& fn) {
  std::vector<std::exception_ptr> errors(parts);
#pragma omp parallel num_threads(parts)
  {
    for (int p = omp_get_thread_num(); p < parts; p += omp_get_num_threads()) {
      try {
        InPart guard;
        int begin, end;
        PartRange(n, parts, p, &begin, &end);
        fn(begin, end, p);
      } catch (...) {
        errors[p] = std::current_exception();
      }
    }
  }
  for (const auto& error : errors) {
    if (error) std::rethrow_exception(error);
  }
}
#endif

ThreadPool::Scope::Scope(ThreadPool* pool) : previous_(current_pool) { current_pool = pool; }

ThreadPool::Scope::~Scope() { current_pool = previous_; }

ThreadPool* ThreadPool::Current() { return current_pool; }

int ParallelParts() { return current_pool && !in_part ? current_pool->threads() : 1; }

int ParallelPartsFor(int n, int grain) {
  const int most = n / std::max(grain, 1);
  return std::max(1, std::min(ParallelParts(), most));
}

void ParallelFor(int n, int grain, const std::function<void(int, int, int)>& fn) {
  const int parts = ParallelPartsFor(n, grain);
  if (parts == 1) {
    fn(0, n, 0);
    return;
  }
  current_pool->Run(n, parts, fn);
}

}  // namespace doppio
