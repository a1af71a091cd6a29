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
//
// With a `momentum` (the SGD solver's) and FRACTION < 1, Deep Gradient Compression's
// momentum correction (Lin et al. 2018): plain error feedback under momentum SGD holds back
// raw gradients, and the solver's momentum then spreads each late lump over the steps after
// it. Instead each rank keeps its own velocity u <- momentum x u + gradient and the residual
// accumulates u, so an entry whose velocity keeps growing is sent sooner, and what the ranks
// send is the step itself, momentum included. The solver's momentum would apply it twice,
// so the bucket receives S_t - momentum x S_(t-1) (S: the mean of what was sent), which the
// solver's history h <- momentum x h + rate x bucket turns back into rate x S_t (exactly at a
// constant rate; weight decay, added after the exchange, keeps the solver's momentum).
// DGC's momentum factor masking (clearing the velocity of the entries sent) is not done: an
// entry sent every step would lose its momentum, a step 1 - momentum times the size, and
// LeNet on Fashion-MNIST lost 0.9 points of accuracy to it (bench/README.md). The residual's
// buffer holds the residual proper, then the velocity (one buffer for the GPU's kernels;
// residual() and velocity() are each its own); S_(t-1), the same on every rank, is the shared
// state.
template <typename Dtype>
class TopKCompressor : public BucketCompressor<Dtype> {
 public:
  TopKCompressor(std::size_t count, double fraction, GpuContext* gpu = nullptr,
                 double momentum = 0);
  void Start(Dtype* bucket, Communicator* comm, const std::string& label) override;
  void Decompress(Dtype* bucket) override;

  std::size_t k() const { return k_; }
  // Whether the momentum correction is on (a momentum, FRACTION < 1).
  bool corrects_momentum() const { return momentum_ != 0; }
  std::vector<Dtype> residual() override;
  void set_residual(const std::vector<Dtype>& values) override;
  std::vector<Dtype> velocity() override;
  void set_velocity(const std::vector<Dtype>& values) override;
  std::vector<Dtype> shared_state() override;
  void set_shared_state(const std::vector<Dtype>& values) override;

 private:
#ifdef DOPPIO_WITH_CUDA
  // Adds the bucket (its velocity, with the momentum correction) to the residual, writes the
  // message and takes what it sends out of the residual.
  void Select_gpu(const Dtype* bucket, char* message);
  // The sum of the messages, less the momentum's share of the last step when corrected.
  void Sum_gpu(const char* gathered, int ranks, Dtype* bucket);
#endif
  std::size_t count_;
  std::size_t k_;
  // 0: plain error feedback.
  Dtype momentum_;
  // S_(t-1), the mean step the ranks sent last iteration (the momentum correction only).
  Blob<Dtype> last_step_;
  std::vector<std::int32_t> order_;
  // One rank's message: k indices (int32), then k values (Dtype).
  SyncedMemory wire_;
  std::unique_ptr<SyncedMemory> gathered_;
  // The GPU's selection: the radix histogram, the state of the search, and the counts of
  // each tile of the compaction.
  std::unique_ptr<SyncedMemory> scratch_;
  // One half of the residual's buffer: 0 the residual, 1 the velocity.
  std::vector<Dtype> Half(int half);
  void SetHalf(int half, const std::vector<Dtype>& values);
};

}  // namespace doppio
