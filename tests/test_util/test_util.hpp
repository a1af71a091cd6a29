#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "doppio/core/blob.hpp"
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

// Parses a LayerParameter (or any message) from text; fails the test on a parse error.
template <typename Message>
Message ParseText(const std::string& text);

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
