#pragma once

#include <memory>
#include <string>
#include <vector>

#include "doppio/data/db.hpp"
#include "doppio/data/shard.hpp"
#include "doppio/layers/base_data_layer.hpp"

namespace doppio {

// Reads Datum records from an LMDB (Caffe's format: raw uint8 data, float_data, or encoded
// JPEG/PNG) in the background, transforms them, and outputs batches of data and labels.
//
// data_param: source, batch_size, backend (LMDB; LEVELDB is refused with an Error; unset
// means LMDB), rand_skip (a random start, the same on every rank), prefetch (batches read
// ahead), and Doppio's shard_rank / shard_size / threads / skip_corrupt. Records are read in key
// order, block-cyclically across ranks (see ShardSequence), and the set wraps around at its end.
// Every record must transform to the same shape (the first record's); give crop_size, or
// resize when converting, for records of differing sizes.
template <typename Dtype>
class DataLayer : public BasePrefetchingDataLayer<Dtype> {
 public:
  explicit DataLayer(const LayerParameter& param) : BasePrefetchingDataLayer<Dtype>(param) {}
  ~DataLayer() override;
  const char* type() const override { return "Data"; }

 protected:
  typename BasePrefetchingDataLayer<Dtype>::ReaderFields Reader() const override;
  std::vector<int> DataLayerSetUp() override;
  void LoadBatch(Batch<Dtype>* batch) override;
  void RestartStreamAt(std::uint64_t position) override;

 private:
  std::string RecordName(std::string_view key) const;

  std::unique_ptr<db::DB> db_;
  std::unique_ptr<ShardedReader> reader_;
  // Per-batch scratch, reused.
  std::vector<ShardedReader::Record> records_;
  std::vector<typename DataTransformer<Dtype>::Draw> draws_;
  std::vector<std::string> failures_;
  // Records replaced since the layer was set up (data_param.skip_corrupt).
  long long skipped_ = 0;
};

}  // namespace doppio
