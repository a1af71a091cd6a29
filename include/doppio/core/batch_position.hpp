#pragma once

#include <cstdint>

namespace doppio {

// Where the samples of the batch now passing through a net sit in the global stream of
// training samples (ShardSequence's positions): sample n of this rank's batch is position
// first() + n, on any number of ranks. The layer that reads the records sets it in each
// Forward; layers that draw random numbers per sample (Dropout, stochastic pooling) key them
// by (their seed, position), so a sample gets the same draws whichever rank reads it.
//
// A net without such a layer (Input, DummyData) has no position; its random layers then
// number their own samples, which keeps draws reproducible but ties them to the process.
class BatchPosition {
 public:
  void Set(std::uint64_t first) {
    first_ = first;
    known_ = true;
  }
  bool known() const { return known_; }
  std::uint64_t first() const { return first_; }

 private:
  std::uint64_t first_ = 0;
  bool known_ = false;
};

}  // namespace doppio
