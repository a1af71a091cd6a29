#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "doppio/core/blob.hpp"
#include "doppio/core/common.hpp"
#include "doppio/util/math_functions.hpp"
#include "doppio/util/rng.hpp"

namespace doppio {

// The types every layer test runs over.
using TestDtypes = ::testing::Types<float, double>;

template <typename Dtype>
void FillGaussian(Blob<Dtype>* blob, Rng& rng, Dtype mean = 0, Dtype stddev = 1) {
  rng_gaussian<Dtype>(blob->count(), mean, stddev, rng, blob->mutable_cpu_data());
}

template <typename Dtype>
void FillUniform(Blob<Dtype>* blob, Rng& rng, Dtype low, Dtype high) {
  rng_uniform<Dtype>(blob->count(), low, high, rng, blob->mutable_cpu_data());
}

// Writes values into a blob's data (or diff); the count must match.
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

// Compares a blob's data (or diff) with expected values, to a relative tolerance.
template <typename Dtype>
void ExpectValues(const Blob<Dtype>& blob, const std::vector<double>& expected, bool diff = false,
                  double tolerance = 1e-5) {
  ASSERT_EQ(blob.count(), static_cast<int>(expected.size())) << "shape " << blob.shape_string();
  const Dtype* got = diff ? blob.cpu_diff() : blob.cpu_data();
  for (std::size_t i = 0; i < expected.size(); ++i) {
    EXPECT_NEAR(got[i], expected[i], tolerance * std::max(1.0, std::fabs(expected[i])))
        << (diff ? "diff" : "data") << " element " << i;
  }
}

template <typename Dtype>
void ExpectDiffs(const Blob<Dtype>& blob, const std::vector<double>& expected) {
  ExpectValues(blob, expected, true);
}

// Runs f and returns the message of the Error it throws; fails the test when none is thrown.
inline std::string ErrorMessageOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected doppio::Error";
  return "";
}

// Runs f and expects a doppio::Error whose message contains every one of pieces.
inline void ExpectError(const std::function<void()>& f, const std::vector<std::string>& pieces) {
  const std::string message = ErrorMessageOf(f);
  if (message.empty()) return;
  for (const std::string& piece : pieces) {
    EXPECT_NE(message.find(piece), std::string::npos)
        << "message \"" << message << "\" lacks \"" << piece << "\"";
  }
}

// A macro, so that a failure names the caller's line.
#define EXPECT_CONTAINS(text, part) \
  EXPECT_NE((text).find(part), std::string::npos) << "no '" << (part) << "' in:\n" << (text)

// Parses a LayerParameter (or any message) from text; fails the test on a parse error.
template <typename Message>
Message ParseText(const std::string& text);

// The repository and the build tree, as absolute paths. They are compile definitions of
// test_paths.cpp alone: as definitions of every suite they made each clone's compilations
// miss ccache, and CI builds a fresh clone in a new folder.
const std::string& SourceDir();
const std::string& BinaryDir();

// A temporary directory removed when the object dies.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace doppio

#include <google/protobuf/text_format.h>

namespace doppio {
template <typename Message>
Message ParseText(const std::string& text) {
  Message message;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &message)) << text;
  return message;
}
}  // namespace doppio
