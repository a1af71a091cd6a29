#include "doppio/data/prefetch.hpp"

#include <glog/logging.h>

namespace doppio {

template <typename Dtype>
BatchPrefetcher<Dtype>::BatchPrefetcher(int depth, Fill fill) : fill_(std::move(fill)) {
  CHECK_GE(depth, 1);
  for (int i = 0; i < depth; ++i) {
    batches_.push_back(std::make_unique<Batch<Dtype>>());
    free_.push_back(batches_.back().get());
  }
}

template <typename Dtype>
void BatchPrefetcher<Dtype>::Start() {
  CHECK(!thread_.joinable()) << "prefetch thread started twice";
  thread_ = std::thread([this] { Run(); });
}

template <typename Dtype>
void BatchPrefetcher<Dtype>::Stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  changed_.notify_all();
  if (thread_.joinable()) thread_.join();
}

template <typename Dtype>
bool BatchPrefetcher<Dtype>::stopping() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stop_;
}

template <typename Dtype>
void BatchPrefetcher<Dtype>::Run() {
  while (true) {
    Batch<Dtype>* batch = nullptr;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      changed_.wait(lock, [this] { return stop_ || !free_.empty(); });
      if (stop_) return;
      batch = free_.front();
      free_.pop_front();
    }
    std::string error;
    try {
      fill_(batch);
    } catch (const std::exception& e) {
      error = e.what();
      if (error.empty()) error = "unknown error in the prefetch thread";
    } catch (...) {
      error = "unknown error in the prefetch thread";
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!error.empty()) {
        failed_ = true;
        error_ = error;
      } else if (!stop_) {
        full_.push_back(batch);
      }
    }
    changed_.notify_all();
    if (!error.empty()) return;
  }
}

template <typename Dtype>
Batch<Dtype>* BatchPrefetcher<Dtype>::Take() {
  std::unique_lock<std::mutex> lock(mutex_);
  CHECK(thread_.joinable()) << "prefetch thread not started";
  changed_.wait(lock, [this] { return !full_.empty() || failed_; });
  if (full_.empty()) throw Error(error_);
  Batch<Dtype>* batch = full_.front();
  full_.pop_front();
  return batch;
}

template <typename Dtype>
bool BatchPrefetcher<Dtype>::ready() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return !full_.empty() || failed_;
}

template <typename Dtype>
void BatchPrefetcher<Dtype>::Release(Batch<Dtype>* batch) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    free_.push_back(batch);
  }
  changed_.notify_all();
}

template class BatchPrefetcher<float>;
template class BatchPrefetcher<double>;

WorkerPool::WorkerPool(int threads) {
  CHECK_GE(threads, 1);
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this] { Work(); });
}

WorkerPool::~WorkerPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    quit_ = true;
  }
  start_.notify_all();
  for (auto& worker : workers_) worker.join();
}

void WorkerPool::RunShare() {
  // Called with the lock released; takes iterations one at a time.
  while (true) {
    int i;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (next_ >= n_) return;
      i = next_++;
    }
    try {
      (*body_)(i);
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!error_) error_ = std::current_exception();
    }
  }
}

void WorkerPool::Work() {
  std::uint64_t seen = 0;
  while (true) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      start_.wait(lock, [&] { return quit_ || generation_ != seen; });
      if (quit_) return;
      seen = generation_;
      ++active_;
    }
    RunShare();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      --active_;
    }
    done_.notify_all();
  }
}

void WorkerPool::For(int n, const std::function<void(int)>& body) {
  if (workers_.empty()) {
    for (int i = 0; i < n; ++i) body(i);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    body_ = &body;
    n_ = n;
    next_ = 0;
    error_ = nullptr;
    ++generation_;
  }
  start_.notify_all();
  RunShare();
  std::exception_ptr error;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    // Every iteration has been handed out; wait for the workers still running one.
    done_.wait(lock, [this] { return active_ == 0; });
    body_ = nullptr;
    error = error_;
    error_ = nullptr;
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace doppio
