#pragma once

#include <cstdint>
#include <vector>

#include "doppio/parallel/gradient_compression.hpp"

namespace doppio {

// Top-k sparsification with error feedback: each rank adds its residual to the bucket,
// sends the k = ceil(FRACTION x count) entries of largest magnitude (indices and values,
// gathered by every rank) and keeps the rest as its new residual. The sum is formed in rank
// order, the same on every rank; with FRACTION 1 nothing is left behind.
template <typename Dtype>
class TopKCompressor : public BucketCompressor<Dtype> {
 public:
  TopKCompressor(std::size_t count, double fraction);
  void Start(Dtype* bucket, Communicator* comm, const std::string& label) override;
  void Decompress(Dtype* bucket) override;

  std::size_t k() const { return k_; }

 private:
  std::size_t count_;
  std::size_t k_;
  std::vector<std::int32_t> order_;
  // One rank's message: k indices (int32), then k values (Dtype).
  std::vector<char> wire_;
  std::vector<char> gathered_;
};

}  // namespace doppio
