#pragma once

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace doppio {

// A fixed set of threads for the CPU kernels' data parallelism (a layer splitting its batch,
// its planes or its elements). Whoever runs a net owns the pool and makes it current for the
// thread that runs the net (ThreadPool::Scope); a layer reaches it through ParallelFor below.
// There is no process-wide pool: without a current one, ParallelFor runs serially, which is
// what library users and tests get unless they ask for threads.
//
// Work is split statically into contiguous ranges, part p always running the p-th range, so
// a result (e.g. the order in which partial sums are added) depends only on the number of
// parts, never on timing.
class ThreadPool {
 public:
  // The calling thread takes part in every run, so `threads` - 1 workers are started.
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int threads() const { return threads_; }

  // Calls fn(begin, end, part) for part = 0 .. parts - 1, where the parts' [begin, end)
  // ranges split [0, n) into contiguous pieces of near-equal size. Part 0 runs on the
  // calling thread; parts must be at most threads(). Returns when all parts are done and
  // rethrows the first exception a part threw. One run at a time: a second thread calling
  // Run waits for the first run to finish; a call from inside a part runs serially.
  void Run(int n, int parts, const std::function<void(int begin, int end, int part)>& fn);

  // Makes a pool the current one of the calling thread for the scope's lifetime (nullptr:
  // none, i.e. serial). Scopes nest; the previous pool is restored on exit.
  class Scope {
   public:
    explicit Scope(ThreadPool* pool);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    ThreadPool* previous_;
  };

  // The calling thread's current pool, or nullptr.
  static ThreadPool* Current();

 private:
  void Work(int index);
  // Where the library is built with OpenMP (for oneDNN), Run runs the parts on OpenMP's
  // threads (src/util/thread_pool.cpp says why) and the pool starts no workers of its own.
  void RunOnOpenmp(int n, int parts, const std::function<void(int, int, int)>& fn);

  int threads_;
  std::vector<std::thread> workers_;
  std::mutex run_mutex_;  // held for a whole run: one run at a time
  std::mutex mutex_;      // guards the fields below
  std::condition_variable start_, done_;
  const std::function<void(int, int, int)>* fn_ = nullptr;
  int n_ = 0;
  int parts_ = 0;
  int pending_ = 0;  // parts of the current run not yet finished on workers
  std::uint64_t generation_ = 0;
  bool quit_ = false;
  std::exception_ptr error_;
};

// How many parts ParallelFor may split work into on the calling thread: the current pool's
// threads, 1 without a pool or inside a running part. Layers size their per-part work
// buffers with it.
int ParallelParts();

// The number of parts ParallelFor(n, grain, ...) uses: ParallelParts(), but no more than
// leave every part at least `grain` items (and at least one part).
int ParallelPartsFor(int n, int grain);

// Splits [0, n) into ParallelPartsFor(n, grain) contiguous ranges and runs
// fn(begin, end, part) for each, in parallel on the current pool. With one part it simply
// calls fn(0, n, 0) on the calling thread. `grain` is the fewest items worth a thread of
// their own (it keeps small loops serial).
void ParallelFor(int n, int grain, const std::function<void(int begin, int end, int part)>& fn);

}  // namespace doppio
