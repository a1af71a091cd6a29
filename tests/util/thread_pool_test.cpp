#include "doppio/util/thread_pool.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

namespace doppio {

namespace {

// Runs ParallelFor(n, grain) and records each part's range and thread.
struct Recorded {
  std::vector<int> begin, end;
  std::vector<std::thread::id> thread;
};

Recorded Record(int n, int grain, int parts_expected) {
  Recorded r;
  r.begin.assign(parts_expected, -1);
  r.end.assign(parts_expected, -1);
  r.thread.resize(parts_expected);
  ParallelFor(n, grain, [&](int begin, int end, int part) {
    r.begin.at(part) = begin;
    r.end.at(part) = end;
    r.thread.at(part) = std::this_thread::get_id();
  });
  return r;
}

}  // namespace

TEST(ThreadPoolTest, WithoutAPoolRunsSeriallyOnTheCaller) {
  EXPECT_EQ(ThreadPool::Current(), nullptr);
  EXPECT_EQ(ParallelParts(), 1);
  EXPECT_EQ(ParallelPartsFor(1000, 1), 1);
  const Recorded r = Record(10, 1, 1);
  EXPECT_EQ(r.begin[0], 0);
  EXPECT_EQ(r.end[0], 10);
  EXPECT_EQ(r.thread[0], std::this_thread::get_id());
}

TEST(ThreadPoolTest, SplitsIntoContiguousRangesOnePerThread) {
  ThreadPool pool(3);
  ThreadPool::Scope use(&pool);
  EXPECT_EQ(ThreadPool::Current(), &pool);
  EXPECT_EQ(ParallelParts(), 3);
  const Recorded r = Record(10, 1, 3);
  // Near-equal contiguous pieces in part order, covering [0, 10).
  EXPECT_EQ(r.begin, (std::vector<int>{0, 3, 6}));
  EXPECT_EQ(r.end, (std::vector<int>{3, 6, 10}));
  // Part 0 on the caller, the others on three different threads.
  EXPECT_EQ(r.thread[0], std::this_thread::get_id());
  EXPECT_EQ(std::set<std::thread::id>(r.thread.begin(), r.thread.end()).size(), 3u);
}

TEST(ThreadPoolTest, GrainLimitsTheParts) {
  ThreadPool pool(4);
  ThreadPool::Scope use(&pool);
  EXPECT_EQ(ParallelPartsFor(100, 40), 2);
  EXPECT_EQ(ParallelPartsFor(100, 1), 4);
  EXPECT_EQ(ParallelPartsFor(3, 1), 3);
  EXPECT_EQ(ParallelPartsFor(5, 10), 1);
  EXPECT_EQ(ParallelPartsFor(0, 1), 1);
  const Recorded r = Record(100, 40, 2);
  EXPECT_EQ(r.begin, (std::vector<int>{0, 50}));
  EXPECT_EQ(r.end, (std::vector<int>{50, 100}));
  // An empty range still calls the body once, with nothing to do.
  const Recorded empty = Record(0, 1, 1);
  EXPECT_EQ(empty.begin[0], 0);
  EXPECT_EQ(empty.end[0], 0);
}

TEST(ThreadPoolTest, EveryItemRunsExactlyOnceOverManyRuns) {
  ThreadPool pool(4);
  ThreadPool::Scope use(&pool);
  std::vector<std::atomic<int>> hits(1000);
  for (int run = 0; run < 500; ++run) {
    const int n = 1 + run % 1000;
    ParallelFor(n, 1, [&](int begin, int end, int) {
      for (int i = begin; i < end; ++i) hits[i].fetch_add(1);
    });
  }
  for (int i = 0; i < 1000; ++i) {
    int expected = 0;
    for (int run = 0; run < 500; ++run) expected += i < 1 + run % 1000;
    ASSERT_EQ(hits[i].load(), expected) << "item " << i;
  }
}

TEST(ThreadPoolTest, RethrowsAPartsExceptionAndStaysUsable) {
  ThreadPool pool(3);
  ThreadPool::Scope use(&pool);
  for (int failing = 0; failing < 3; ++failing) {
    EXPECT_THROW(ParallelFor(3, 1,
                             [&](int, int, int part) {
                               if (part == failing) throw std::runtime_error("part failed");
                             }),
                 std::runtime_error);
  }
  std::atomic<int> sum{0};
  ParallelFor(30, 1, [&](int begin, int end, int) { sum += end - begin; });
  EXPECT_EQ(sum.load(), 30);
}

TEST(ThreadPoolTest, NestedWorkRunsSeriallyInsideAPart) {
  ThreadPool pool(2);
  ThreadPool::Scope use(&pool);
  std::atomic<int> inner_parts{0}, inner_items{0};
  ParallelFor(2, 1, [&](int, int, int) {
    EXPECT_EQ(ParallelParts(), 1);
    ParallelFor(10, 1, [&](int begin, int end, int part) {
      EXPECT_EQ(part, 0);
      inner_parts += 1;
      inner_items += end - begin;
    });
  });
  EXPECT_EQ(inner_parts.load(), 2);
  EXPECT_EQ(inner_items.load(), 20);
  EXPECT_EQ(ParallelParts(), 2);
}

TEST(ThreadPoolTest, ScopesNestAndAreThreadLocal) {
  ThreadPool outer(2), inner(3);
  {
    ThreadPool::Scope use_outer(&outer);
    {
      ThreadPool::Scope use_inner(&inner);
      EXPECT_EQ(ParallelParts(), 3);
      {
        ThreadPool::Scope serial(nullptr);
        EXPECT_EQ(ParallelParts(), 1);
      }
      EXPECT_EQ(ParallelParts(), 3);
    }
    EXPECT_EQ(ParallelParts(), 2);
    // Another thread has no pool unless it makes one current.
    int other = 0;
    std::thread([&] { other = ParallelParts(); }).join();
    EXPECT_EQ(other, 1);
  }
  EXPECT_EQ(ThreadPool::Current(), nullptr);
}

TEST(ThreadPoolTest, RunsFromSeveralThreadsTakeTurns) {
  ThreadPool pool(2);
  std::atomic<int> total{0};
  std::vector<std::thread> callers;
  for (int t = 0; t < 4; ++t) {
    callers.emplace_back([&] {
      ThreadPool::Scope use(&pool);
      for (int run = 0; run < 200; ++run) {
        ParallelFor(8, 1, [&](int begin, int end, int) { total += end - begin; });
      }
    });
  }
  for (auto& caller : callers) caller.join();
  EXPECT_EQ(total.load(), 4 * 200 * 8);
}

}  // namespace doppio
