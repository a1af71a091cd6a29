#include "doppio/data/prefetch.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

#include "test_util.hpp"

namespace doppio {
namespace {

using Clock = std::chrono::steady_clock;

// Batch n: `count` values n and the label -n.
void Fill(Batch<float>* batch, int n, int count) {
  batch->data.Reshape({count});
  std::fill_n(batch->data.mutable_cpu_data(), count, static_cast<float>(n));
  batch->label.Reshape({1});
  batch->label.mutable_cpu_data()[0] = static_cast<float>(-n);
}

// A fill that numbers the batches it makes, sleeping `delay_ms` for each.
struct CountingFill {
  std::atomic<int> next{0};
  int delay_ms = 0;
  void operator()(Batch<float>* batch) {
    if (delay_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    const int n = next++;
    Fill(batch, n, 3);
  }
};

std::vector<float> Consume(BatchPrefetcher<float>* prefetcher, int count, int consumer_delay_ms) {
  std::vector<float> seen;
  for (int i = 0; i < count; ++i) {
    Batch<float>* batch = prefetcher->Take();
    seen.push_back(batch->data.cpu_data()[0]);
    EXPECT_EQ(batch->label.cpu_data()[0], -batch->data.cpu_data()[0]);
    if (consumer_delay_ms > 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(consumer_delay_ms));
    }
    prefetcher->Release(batch);
  }
  return seen;
}

TEST(BatchPrefetcherTest, DeliversBatchesInOrderWhateverTheSpeeds) {
  std::vector<float> expected(12);
  for (int i = 0; i < 12; ++i) expected[i] = static_cast<float>(i);
  for (int depth : {1, 2, 4}) {
    for (auto [fill_delay, consumer_delay] : {std::pair{0, 0}, {3, 0}, {0, 3}}) {
      CountingFill fill;
      fill.delay_ms = fill_delay;
      BatchPrefetcher<float> prefetcher(depth, [&](Batch<float>* b) { fill(b); });
      prefetcher.Start();
      EXPECT_EQ(Consume(&prefetcher, 12, consumer_delay), expected)
          << "depth " << depth << " fill delay " << fill_delay;
    }
  }
}

// ready() says whether Take would return at once (the data layer counts the waits by it).
TEST(BatchPrefetcherTest, ReadyTellsWhetherTakeWouldWait) {
  CountingFill fill;
  BatchPrefetcher<float> prefetcher(1, [&](Batch<float>* b) { fill(b); });
  prefetcher.Start();
  Batch<float>* batch = prefetcher.Take();
  // The ring's only batch is the caller's: nothing can be ready.
  EXPECT_FALSE(prefetcher.ready());
  prefetcher.Release(batch);
  const auto deadline = Clock::now() + std::chrono::seconds(10);
  while (!prefetcher.ready() && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_TRUE(prefetcher.ready());
  EXPECT_EQ(prefetcher.Take()->data.cpu_data()[0], 1.0f);
}

TEST(BatchPrefetcherTest, FillsAtMostDepthAhead) {
  CountingFill fill;
  BatchPrefetcher<float> prefetcher(3, [&](Batch<float>* b) { fill(b); });
  prefetcher.Start();
  auto wait_for = [&](int n) {
    const auto deadline = Clock::now() + std::chrono::seconds(5);
    while (fill.next.load() < n && Clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    // Give it time to overrun, if it would.
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
  };
  wait_for(3);
  EXPECT_EQ(fill.next.load(), 3);
  Consume(&prefetcher, 1, 0);
  wait_for(4);
  EXPECT_EQ(fill.next.load(), 4);
}

TEST(BatchPrefetcherTest, StopWhileWaitingForAFreeBatchDoesNotHang) {
  CountingFill fill;
  const auto start = Clock::now();
  {
    BatchPrefetcher<float> prefetcher(2, [&](Batch<float>* b) { fill(b); });
    prefetcher.Start();
    Consume(&prefetcher, 1, 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }  // destructor: the thread waits for a free batch
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - start).count(), 2.0);
}

TEST(BatchPrefetcherTest, StopDuringASlowFillWaitsOnlyForThatBatch) {
  CountingFill fill;
  fill.delay_ms = 200;
  const auto start = Clock::now();
  {
    BatchPrefetcher<float> prefetcher(4, [&](Batch<float>* b) { fill(b); });
    prefetcher.Start();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  EXPECT_LT(seconds, 1.0);
  EXPECT_LE(fill.next.load(), 1);
}

TEST(BatchPrefetcherTest, FillErrorSurfacesInTakeAfterTheFinishedBatches) {
  std::atomic<int> calls{0};
  BatchPrefetcher<float> prefetcher(4, [&](Batch<float>* batch) {
    const int n = calls++;
    if (n == 2) throw Error("layer 'd' (Data): record '00000002' is not a Datum");
    Fill(batch, n, 1);
  });
  prefetcher.Start();
  EXPECT_EQ(Consume(&prefetcher, 2, 0), (std::vector<float>{0, 1}));
  for (int i = 0; i < 2; ++i) {
    try {
      prefetcher.Take();
      ADD_FAILURE() << "expected an Error";
    } catch (const Error& error) {
      EXPECT_NE(std::string(error.what()).find("record '00000002'"), std::string::npos);
    }
  }
}

TEST(WorkerPoolTest, RunsEveryIterationOnce) {
  for (int threads : {1, 2, 4}) {
    WorkerPool pool(threads);
    EXPECT_EQ(pool.threads(), threads);
    for (int round = 0; round < 50; ++round) {
      std::vector<std::atomic<int>> hits(37);
      pool.For(37, [&](int i) { ++hits[i]; });
      for (auto& h : hits) EXPECT_EQ(h.load(), 1);
    }
    pool.For(0, [](int) { ADD_FAILURE(); });
  }
}

TEST(WorkerPoolTest, RethrowsTheFirstError) {
  WorkerPool pool(3);
  std::atomic<int> ran{0};
  EXPECT_THROW(pool.For(20,
                        [&](int i) {
                          ++ran;
                          if (i == 7) throw Error("bad record 7");
                        }),
               Error);
  EXPECT_EQ(ran.load(), 20);
  // The pool still works afterwards.
  std::atomic<int> sum{0};
  pool.For(10, [&](int i) { sum += i; });
  EXPECT_EQ(sum.load(), 45);
}

}  // namespace
}  // namespace doppio
