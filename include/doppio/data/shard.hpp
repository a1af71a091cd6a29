#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "doppio/core/common.hpp"
#include "doppio/data/db.hpp"

namespace doppio {

// Block-cyclic sharding of an endless, cyclic stream of records.
//
// The records are numbered 0..N-1 and read round and round: stream position p holds record
// p mod N. One process with batch G reads positions [kG, kG + G) as its k-th batch. With
// `size` ranks of batch B each (G = size * B), rank r's k-th batch is positions
// [kG + rB, kG + rB + B): the ranks' k-th batches together are exactly the single process's
// k-th batch, each rank reads contiguous records, every rank has a k-th batch for every k,
// and all ranks wrap at the end of the set together. A start offset shifts every rank's
// stream by the same amount: rand_skip, or where a resumed run's stream stands (positions
// are not reduced mod N, so they number epochs too).
class ShardSequence {
 public:
  ShardSequence(int rank, int size, int batch, std::uint64_t num_records, std::uint64_t offset = 0);

  // The stream position of record j of this rank's k-th batch (not reduced mod N).
  std::uint64_t Position(std::uint64_t k, int j) const {
    return offset_ + k * global_batch_ + static_cast<std::uint64_t>(rank_) * batch_ + j;
  }
  // The record at that position.
  std::uint64_t RecordIndex(std::uint64_t k, int j) const { return Position(k, j) % num_records_; }
  // Batches that make one pass over the set (the last may wrap): ceil(N / (size * B)).
  std::uint64_t batches_per_epoch() const {
    return (num_records_ + global_batch_ - 1) / global_batch_;
  }
  int rank() const { return rank_; }
  int size() const { return size_; }
  int batch() const { return batch_; }
  std::uint64_t num_records() const { return num_records_; }

 private:
  int rank_, size_, batch_;
  std::uint64_t num_records_, offset_, global_batch_;
};

// Reads this rank's records from a DB, batch after batch, in ShardSequence order. Records are
// visited through one cursor that only moves forward (skipping the other ranks' records)
// and goes back to the first record at the end of the set.
class ShardedReader {
 public:
  ShardedReader(db::DB* db, int rank, int size, int batch, std::uint64_t offset = 0);

  struct Record {
    std::string_view key;
    std::string_view value;  // valid while the reader lives (LMDB read transaction)
    std::uint64_t index;     // record number in the DB
    std::uint64_t position;  // place in the stream (ShardSequence::Position)
  };
  // The next record of this rank's stream.
  Record Next();
  // The record the next call to Next() returns, without consuming it.
  Record Peek();
  const ShardSequence& sequence() const { return sequence_; }

 private:
  void SeekTo(std::uint64_t index);

  std::unique_ptr<db::Cursor> cursor_;
  ShardSequence sequence_;
  std::uint64_t cursor_index_ = 0;
  std::uint64_t batch_k_ = 0;
  int batch_j_ = 0;
};

// Sets which shard of its records every shardable layer of `param` reads (LayerTraits::shard:
// shard_rank / shard_size of Data and ImageData layers); the data-parallel code calls this on
// each rank before building its nets. Returns how many layers it set. Layers of other types,
// data sources that cannot shard included, are left alone.
int ShardDataLayers(NetParameter* param, int rank, int size);

}  // namespace doppio
