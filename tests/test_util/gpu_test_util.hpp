#pragma once

// Helpers for the *_gpu_test.cpp suites (built only with CUDA). Every test that needs a
// device starts with DOPPIO_REQUIRE_GPU(), which reports it as skipped on a machine without
// one.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>

#include "doppio/core/blob.hpp"
#include "doppio/device/gpu_context.hpp"

namespace doppio {

// The context the GPU tests run on: device 0, TF32 off (so that float32 results can be
// compared with the CPU's to 1e-4), heuristic algorithm choice. One per test process.
inline std::shared_ptr<GpuContext> TestGpu() {
  static std::shared_ptr<GpuContext> gpu = [] {
    GpuOptions options;
    options.tf32_conv = false;
    options.tf32_gemm = false;
    return GpuContext::Create(0, options);
  }();
  return gpu;
}

// Tolerances for comparing GPU results with the CPU's: 1e-4 relative in float32.
template <typename Dtype>
constexpr double GpuTolerance() {
  return sizeof(Dtype) == 4 ? 1e-4 : 1e-7;
}

// Expects two equally shaped arrays to agree to `tolerance`, relative to max(1, |a|, |b|).
template <typename Dtype>
void ExpectClose(const Dtype* expected, const Dtype* actual, int count, double tolerance,
                 const std::string& what) {
  int failures = 0;
  for (int i = 0; i < count && failures < 10; ++i) {
    const double a = expected[i], b = actual[i];
    const double scale = std::max({1.0, std::fabs(a), std::fabs(b)});
    if (!(std::fabs(a - b) <= tolerance * scale)) {
      ADD_FAILURE() << what << " element " << i << ": CPU " << a << " vs GPU " << b;
      ++failures;
    }
  }
}

template <typename Dtype>
void ExpectBlobsClose(const Blob<Dtype>& expected, const Blob<Dtype>& actual, bool diff,
                      double tolerance, const std::string& what) {
  ASSERT_EQ(expected.shape(), actual.shape()) << what;
  ExpectClose(diff ? expected.cpu_diff() : expected.cpu_data(),
              diff ? actual.cpu_diff() : actual.cpu_data(), expected.count(), tolerance, what);
}

}  // namespace doppio

// Skips the current test, reporting it as skipped, when no CUDA device is usable.
#define DOPPIO_REQUIRE_GPU()                                                         \
  do {                                                                               \
    if (::doppio::GpuDeviceCount() == 0) {                                           \
      GTEST_SKIP() << "no CUDA device (" << ::doppio::GpuUnavailableReason() << ")"; \
    }                                                                                \
  } while (0)
