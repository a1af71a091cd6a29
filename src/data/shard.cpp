#include "doppio/data/shard.hpp"

#include <glog/logging.h>

#include "doppio/core/layer_registry.hpp"

namespace doppio {

ShardSequence::ShardSequence(int rank, int size, int batch, std::uint64_t num_records,
                             std::uint64_t offset)
    : rank_(rank), size_(size), batch_(batch), num_records_(num_records) {
  CHECK_GE(size, 1);
  CHECK_GE(rank, 0);
  CHECK_LT(rank, size);
  CHECK_GE(batch, 1);
  CHECK_GE(num_records, 1u);
  global_batch_ = static_cast<std::uint64_t>(size) * static_cast<std::uint64_t>(batch);
  offset_ = offset;
}

ShardedReader::ShardedReader(db::DB* db, int rank, int size, int batch, std::uint64_t offset)
    : cursor_(db->NewCursor()), sequence_(rank, size, batch, db->size(), offset) {
  cursor_index_ = 0;
  DOPPIO_ENSURE(cursor_->valid()) << "LMDB '" << db->source() << "' holds no records";
}

void ShardedReader::SeekTo(std::uint64_t index) {
  if (index < cursor_index_) {
    cursor_->SeekToFirst();
    cursor_index_ = 0;
  }
  while (cursor_index_ < index) {
    cursor_->Next();
    ++cursor_index_;
    // The count taken at start-up is the truth for the stream; a DB that shrank while being
    // read is an internal inconsistency, not a user error we can explain better.
    CHECK(cursor_->valid()) << "the DB has fewer records than it reported";
  }
}

ShardedReader::Record ShardedReader::Peek() {
  const std::uint64_t index = sequence_.RecordIndex(batch_k_, batch_j_);
  SeekTo(index);
  return {cursor_->key(), cursor_->value(), index, sequence_.Position(batch_k_, batch_j_)};
}

ShardedReader::Record ShardedReader::Next() {
  Record record = Peek();
  if (++batch_j_ == sequence_.batch()) {
    batch_j_ = 0;
    ++batch_k_;
  }
  return record;
}

int ShardDataLayers(NetParameter* param, int rank, int size) {
  CHECK_GE(size, 1);
  CHECK_GE(rank, 0);
  CHECK_LT(rank, size);
  int count = 0;
  for (LayerParameter& layer : *param->mutable_layer()) {
    const LayerTraits::ShardFn shard = LayerTypeTraits(layer.type()).shard;
    if (shard == nullptr) continue;
    shard(&layer, rank, size);
    ++count;
  }
  return count;
}

}  // namespace doppio
