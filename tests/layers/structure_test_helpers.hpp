#pragma once

// Small helpers shared by the structure layers' tests (Concat, Slice, Reshape, ...).

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "doppio/core/blob.hpp"
#include "doppio/core/common.hpp"

namespace doppio {

// Writes values into a blob's data; the count must match.
template <typename Dtype>
void SetValues(Blob<Dtype>* blob, const std::vector<double>& values) {
  ASSERT_EQ(blob->count(), static_cast<int>(values.size()));
  Dtype* data = blob->mutable_cpu_data();
  for (std::size_t i = 0; i < values.size(); ++i) data[i] = static_cast<Dtype>(values[i]);
}

template <typename Dtype>
void SetDiffs(Blob<Dtype>* blob, const std::vector<double>& values) {
  ASSERT_EQ(blob->count(), static_cast<int>(values.size()));
  Dtype* diff = blob->mutable_cpu_diff();
  for (std::size_t i = 0; i < values.size(); ++i) diff[i] = static_cast<Dtype>(values[i]);
}

// Compares a blob's data (or diff) with expected values, element by element.
template <typename Dtype>
void ExpectValues(const Blob<Dtype>& blob, const std::vector<double>& expected, bool diff = false,
                  double tolerance = 1e-5) {
  ASSERT_EQ(blob.count(), static_cast<int>(expected.size())) << "shape " << blob.shape_string();
  const Dtype* values = diff ? blob.cpu_diff() : blob.cpu_data();
  for (std::size_t i = 0; i < expected.size(); ++i) {
    EXPECT_NEAR(values[i], expected[i], tolerance) << "element " << i;
  }
}

template <typename Dtype>
void ExpectDiffs(const Blob<Dtype>& blob, const std::vector<double>& expected) {
  ExpectValues(blob, expected, true);
}

// Runs f and expects a doppio::Error whose message contains every one of pieces.
template <typename F>
void ExpectError(F&& f, const std::vector<std::string>& pieces) {
  try {
    f();
  } catch (const Error& e) {
    const std::string message = e.what();
    for (const std::string& piece : pieces) {
      EXPECT_NE(message.find(piece), std::string::npos)
          << "message \"" << message << "\" lacks \"" << piece << "\"";
    }
    return;
  }
  ADD_FAILURE() << "expected doppio::Error";
}

}  // namespace doppio
