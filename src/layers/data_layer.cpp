#include "doppio/layers/data_layer.hpp"

#include <glog/logging.h>

#include "doppio/core/layer_registry.hpp"

namespace doppio {

template <typename Dtype>
DataLayer<Dtype>::~DataLayer() {
  this->StopPrefetching();
}

template <typename Dtype>
std::string DataLayer<Dtype>::RecordName(std::string_view key) const {
  return "record '" + std::string(key) + "' of LMDB '" + db_->source() + "'";
}

template <typename Dtype>
typename BasePrefetchingDataLayer<Dtype>::ReaderFields DataLayer<Dtype>::Reader() const {
  const auto& p = this->layer_param_.data_param();
  return {"data_param",   p.has_batch_size(), p.batch_size(), "data_param",
          p.shard_rank(), p.shard_size(),     p.has_threads(), p.threads()};
}

template <typename Dtype>
std::vector<int> DataLayer<Dtype>::DataLayerSetUp() {
  const std::string who = this->Describe();
  const DataParameter& param = this->layer_param_.data_param();
  DOPPIO_ENSURE(param.has_source() && !param.source().empty())
      << who << ": data_param.source is not set";
  // Doppio reads LMDB only, so an unset backend (Caffe's default is LEVELDB) means LMDB; an
  // explicit LEVELDB is refused.
  const DataParameter::DB backend = param.has_backend() ? param.backend() : DataParameter::LMDB;
  db_ = db::OpenDB(backend, param.source(), db::Mode::kRead, who);
  const std::size_t num_records = db_->size();
  DOPPIO_ENSURE(num_records > 0) << who << ": LMDB '" << param.source() << "' holds no records";

  std::uint64_t offset = 0;
  if (param.rand_skip() > 0) {
    // Drawn from the base seed, so that every rank skips the same records.
    Rng skip_rng(DeriveSeed(this->base_seed_, 0x5eed5));
    offset = skip_rng.Below(param.rand_skip());
    LOG(INFO) << who << ": skipping the first " << offset << " records";
  }
  this->StreamFrom(offset);
  this->batches_per_epoch_ = reader_->sequence().batches_per_epoch();
  LOG(INFO) << who << ": " << num_records << " records in '" << param.source() << "', "
            << this->batches_per_epoch_ << " batches per epoch";

  // The first record of this rank's stream sets the shape of every batch.
  const ShardedReader::Record first = reader_->Peek();
  Datum datum;
  DOPPIO_ENSURE(datum.ParseFromArray(first.value.data(), static_cast<int>(first.value.size())))
      << who << ": " << RecordName(first.key) << " is not a Datum";
  return this->transformer_->InferShape(datum, RecordName(first.key));
}

template <typename Dtype>
void DataLayer<Dtype>::RestartStreamAt(std::uint64_t position) {
  reader_ = std::make_unique<ShardedReader>(db_.get(), this->shard_rank_, this->shard_size_,
                                            this->batch_size_, position);
}

template <typename Dtype>
void DataLayer<Dtype>::LoadBatch(Batch<Dtype>* batch) {
  const int batch_size = this->batch_size_;
  const std::vector<int>& shape = this->record_shape_;
  const std::size_t record_count = static_cast<std::size_t>(shape[0]) * shape[1] * shape[2];
  batch->data.Reshape({batch_size, shape[0], shape[1], shape[2]});
  batch->label.Reshape({batch_size});
  Dtype* const data = batch->data.mutable_cpu_data();
  Dtype* const labels = batch->label.mutable_cpu_data();

  // Reading and the random draws stay in order on this thread; decoding and transforming,
  // the costly part, may fan out.
  records_.resize(batch_size);
  draws_.resize(batch_size);
  for (int i = 0; i < batch_size; ++i) {
    records_[i] = reader_->Next();
    draws_[i] = this->transformer_->DrawFor(records_[i].position);
  }
  batch->first_position = records_[0].position;
  const std::string who = this->Describe();
  const bool skip_corrupt = this->layer_param_.data_param().skip_corrupt();
  // Per record: empty, or why it did not decode (skip_corrupt only).
  failures_.assign(batch_size, std::string());
  auto transform = [&](int from, int into) {
    const ShardedReader::Record& record = records_[from];
    Datum datum;
    if (!datum.ParseFromArray(record.value.data(), static_cast<int>(record.value.size()))) {
      throw UndecodableRecord(who + ": " + RecordName(record.key) + " is not a Datum");
    }
    this->transformer_->Transform(datum, draws_[into], data + record_count * into,
                                  RecordName(record.key), &shape);
    labels[into] = static_cast<Dtype>(datum.label());
  };
  this->workers_->For(batch_size, [&](int i) {
    try {
      transform(i, i);
    } catch (const UndecodableRecord& error) {
      if (!skip_corrupt) throw;
      failures_[i] = error.what();
    }
  });
  if (!skip_corrupt) return;
  // A record that does not decode takes the place of the nearest earlier one of its batch
  // that does, with its own draw: the batch keeps its size and every other record its draw,
  // so runs on any number of ranks, and resumed runs, still agree.
  for (int i = 0; i < batch_size; ++i) {
    if (failures_[i].empty()) continue;
    int from = i;
    do {
      from = (from + batch_size - 1) % batch_size;
    } while (from != i && !failures_[from].empty());
    DOPPIO_ENSURE(from != i) << who << ": no record of the batch at stream position "
                             << batch->first_position << " decodes; the first: " << failures_[i];
    transform(from, i);
    ++skipped_;
    LOG(WARNING) << failures_[i] << "; skipped (data_param.skip_corrupt), "
                 << RecordName(records_[from].key) << " in its place; " << skipped_
                 << (skipped_ == 1 ? " record" : " records") << " skipped so far";
  }
}

namespace {
// Each rank reads its own block of every global batch (ShardSequence).
void ShardDataParam(LayerParameter* param, int rank, int size) {
  param->mutable_data_param()->set_shard_rank(rank);
  param->mutable_data_param()->set_shard_size(size);
}
}  // namespace

DOPPIO_INSTANTIATE_CLASS(DataLayer);
REGISTER_LAYER_CLASS_WITH_TRAITS(Data, LayerTraits().ReadsData().Shardable(ShardDataParam));

}  // namespace doppio
