#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "doppio/core/blob.hpp"
#include "doppio/core/common.hpp"

namespace doppio {

// One batch of input: data (shape(0) records) and one label per record. Blobs, so that in GPU
// mode the records are written straight into pinned host memory and copied from there, or
// decoded on the device (BatchUploader).
template <typename Dtype>
struct Batch {
  Blob<Dtype> data;
  Blob<Dtype> label;
  // The stream position of the first record (ShardSequence); the others follow it.
  std::uint64_t first_position = 0;
};

// Fills batches on a background thread, up to `depth` ahead of the consumer.
//
// Two queues of the same `depth` batches: free ones wait for the thread, full ones for
// Take(). An Error (or any exception) thrown by `fill` stops the thread; Take() then delivers
// the batches finished before it and afterwards throws the error, every time it is called.
// Stop() (and the destructor) asks the thread to end and joins it: a thread waiting for a
// free batch ends at once, one inside `fill` when fill returns (fill may poll stopping() to
// return early).
template <typename Dtype>
class BatchPrefetcher {
 public:
  using Fill = std::function<void(Batch<Dtype>*)>;

  BatchPrefetcher(int depth, Fill fill);
  ~BatchPrefetcher() { Stop(); }
  BatchPrefetcher(const BatchPrefetcher&) = delete;
  BatchPrefetcher& operator=(const BatchPrefetcher&) = delete;

  void Start();
  void Stop();
  bool stopping() const;

  // Blocks until a batch is ready. The batch stays the caller's until Release.
  Batch<Dtype>* Take();
  // Whether Take would return without waiting (a batch is ready, or the thread failed).
  bool ready() const;
  void Release(Batch<Dtype>* batch);

 private:
  void Run();

  Fill fill_;
  std::vector<std::unique_ptr<Batch<Dtype>>> batches_;
  std::deque<Batch<Dtype>*> free_, full_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::thread thread_;
  bool stop_ = false;
  bool failed_ = false;
  std::string error_;
};

// A fixed set of worker threads that runs a loop body over [0, n) together with the calling
// thread. With one thread it simply runs the loop. The first exception thrown by any
// iteration is rethrown by For (the remaining iterations still run).
class WorkerPool {
 public:
  explicit WorkerPool(int threads);
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  void For(int n, const std::function<void(int)>& body);
  int threads() const { return static_cast<int>(workers_.size()) + 1; }

 private:
  void Work();
  void RunShare();

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable start_, done_;
  const std::function<void(int)>* body_ = nullptr;
  int n_ = 0;
  int next_ = 0;
  int active_ = 0;
  std::uint64_t generation_ = 0;
  bool quit_ = false;
  std::exception_ptr error_;
};

}  // namespace doppio
