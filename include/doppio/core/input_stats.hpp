#pragma once

#include <cstdint>

namespace doppio {

// What a layer that reads records did since it was set up, for the training log: how fast
// its background filling runs while it works (its capacity, which the net's consumption does
// not cap) and how long the net's Forward waited for a batch. Counters only grow, so a reader
// takes the difference between two readings.
struct InputStats {
  std::uint64_t records = 0;  // records filled into batches
  double fill_seconds = 0;    // time spent filling them
  std::uint64_t batches = 0;  // batches Forward took
  std::uint64_t waits = 0;    // of those, the ones that were not ready yet
  double wait_seconds = 0;    // time Forward waited for them

  InputStats& operator+=(const InputStats& other) {
    records += other.records;
    fill_seconds += other.fill_seconds;
    batches += other.batches;
    waits += other.waits;
    wait_seconds += other.wait_seconds;
    return *this;
  }
  InputStats operator-(const InputStats& earlier) const {
    return {records - earlier.records, fill_seconds - earlier.fill_seconds,
            batches - earlier.batches, waits - earlier.waits, wait_seconds - earlier.wait_seconds};
  }
};

}  // namespace doppio
