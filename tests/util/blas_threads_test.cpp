// The CPU layers call BLAS from several pool threads at once, with BLAS itself single-threaded
// (doppio time sets that up). This checks that such concurrent calls give exactly the serial
// results, for products small enough for OpenBLAS's unpacked kernels and for large ones that
// go through its packing buffers.
#include <gtest/gtest.h>

#include <vector>

#include "doppio/util/math_functions.hpp"
#include "doppio/util/rng.hpp"
#include "doppio/util/thread_pool.hpp"

namespace doppio {

namespace {

struct Product {
  Trans trans_a, trans_b;
  int m, n, k;
};

}  // namespace

TEST(BlasThreadsTest, ConcurrentProductsEqualSerialOnes) {
  const std::vector<Product> products = {
      {Trans::kNo, Trans::kNo, 32, 32, 800},    {Trans::kYes, Trans::kNo, 800, 32, 32},
      {Trans::kNo, Trans::kYes, 75, 32, 416},   {Trans::kNo, Trans::kNo, 96, 300, 363},
      {Trans::kNo, Trans::kYes, 128, 200, 300}, {Trans::kYes, Trans::kNo, 256, 196, 480},
  };
  constexpr int kThreads = 4, kRepeats = 20;
  Rng rng(5);
  for (const Product& p : products) {
    std::vector<float> a(static_cast<size_t>(p.m) * p.k), b(static_cast<size_t>(p.k) * p.n);
    rng_gaussian(static_cast<int>(a.size()), 0.f, 1.f, rng, a.data());
    rng_gaussian(static_cast<int>(b.size()), 0.f, 1.f, rng, b.data());
    std::vector<float> expected(static_cast<size_t>(p.m) * p.n);
    cpu_gemm<float>(p.trans_a, p.trans_b, p.m, p.n, p.k, 1.f, a.data(), b.data(), 0.f,
                    expected.data());
    std::vector<std::vector<float>> results(kThreads, std::vector<float>(expected.size()));
    ThreadPool pool(kThreads);
    ThreadPool::Scope use(&pool);
    for (int repeat = 0; repeat < kRepeats; ++repeat) {
      ParallelFor(kThreads, 1, [&](int begin, int end, int) {
        for (int t = begin; t < end; ++t) {
          cpu_gemm<float>(p.trans_a, p.trans_b, p.m, p.n, p.k, 1.f, a.data(), b.data(), 0.f,
                          results[t].data());
        }
      });
      for (int t = 0; t < kThreads; ++t) {
        ASSERT_EQ(results[t], expected) << p.m << "x" << p.n << "x" << p.k << " thread " << t;
      }
    }
  }
}

}  // namespace doppio
