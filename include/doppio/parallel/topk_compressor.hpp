#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "doppio/core/synced_memory.hpp"
#include "doppio/parallel/gradient_compression.hpp"

namespace doppio {

// Top-k sparsification with error feedback: each rank adds its residual to the bucket,
// sends the k = ceil(FRACTION x count) entries of largest magnitude (indices and values,
// gathered by every rank) and keeps the rest as its new residual. The sum is formed in rank
// order, the same on every rank; with FRACTION 1 nothing is left behind.
//
// The entries sent are the first k in the order (larger magnitude first, then smaller
// index), listed by increasing index. On a GPU (topk_compressor.cu) the same entries are
// found by a radix selection of the k-th largest magnitude (its float bits) and an
// index-ordered compaction, and summed in the same order, so the results are the host's bit
// for bit (a NaN, which has no place in that order on the host, counts as the largest there).
template <typename Dtype>
class TopKCompressor : public BucketCompressor<Dtype> {
 public:
  TopKCompressor(std::size_t count, double fraction, GpuContext* gpu = nullptr);
  void Start(Dtype* bucket, Communicator* comm, const std::string& label) override;
  void Decompress(Dtype* bucket) override;

  std::size_t k() const { return k_; }

 private:
#ifdef DOPPIO_WITH_CUDA
  // Adds the bucket to the residual, writes the message and takes what it sends out of the
  // residual.
  void Select_gpu(const Dtype* bucket, char* message);
  void Sum_gpu(const char* gathered, int ranks, Dtype* bucket);
#endif
  std::size_t count_;
  std::size_t k_;
  std::vector<std::int32_t> order_;
  // One rank's message: k indices (int32), then k values (Dtype).
  SyncedMemory wire_;
  std::unique_ptr<SyncedMemory> gathered_;
  // The GPU's selection: the radix histogram, the state of the search, and the counts of
  // each tile of the compaction.
  std::unique_ptr<SyncedMemory> scratch_;
};

}  // namespace doppio
