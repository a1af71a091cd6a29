#include "doppio/layers/data_layer.hpp"

#include <glog/logging.h>

#include <cstring>

#include "doppio/core/layer_registry.hpp"
#include "doppio/data/encoded_image.hpp"

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
  return {"data_param",   p.has_batch_size(), p.batch_size(),  "data_param",
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
  decode_on_gpu_ = param.decode() == DataParameter::GPU;
#ifndef DOPPIO_WITH_NVJPEG
  DOPPIO_ENSURE(!decode_on_gpu_)
      << who << ": data_param.decode: GPU needs nvJPEG, and this build has none (built without "
      << "CUDA, or with the CUDA emulation); use decode: CPU";
#endif
  DOPPIO_ENSURE(!decode_on_gpu_ ||
                this->transformer_->param().decoder() == TransformationParameter::AUTO)
      << who << ": data_param.decode: GPU decodes with nvJPEG, not with transform_param.decoder "
      << "OPENCV; set one of them";
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
void DataLayer<Dtype>::ReadRecords(Batch<Dtype>* batch) {
  const int batch_size = this->batch_size_;
  records_.resize(batch_size);
  draws_.resize(batch_size);
  for (int i = 0; i < batch_size; ++i) {
    records_[i] = reader_->Next();
    draws_[i] = this->transformer_->DrawFor(records_[i].position);
  }
  batch->first_position = records_[0].position;
}

template <typename Dtype>
void DataLayer<Dtype>::ReplaceFailures(const Batch<Dtype>& batch,
                                       const std::function<void(int, int)>& redo) {
  const int batch_size = this->batch_size_;
  const std::string who = this->Describe();
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
                             << batch.first_position << " decodes; the first: " << failures_[i];
    redo(from, i);
    ++skipped_;
    LOG(WARNING) << failures_[i] << "; skipped (data_param.skip_corrupt), "
                 << RecordName(records_[from].key) << " in its place; " << skipped_
                 << (skipped_ == 1 ? " record" : " records") << " skipped so far";
  }
}

template <typename Dtype>
void DataLayer<Dtype>::Forward_cpu(const typename BasePrefetchingDataLayer<Dtype>::BlobVec& bottom,
                                   const typename BasePrefetchingDataLayer<Dtype>::BlobVec& top) {
  DOPPIO_ENSURE(!decode_on_gpu_) << this->Describe()
                                 << ": data_param.decode: GPU needs the net on a GPU (--gpu); on "
                                    "the CPU use decode: CPU";
  BasePrefetchingDataLayer<Dtype>::Forward_cpu(bottom, top);
}

template <typename Dtype>
void DataLayer<Dtype>::LoadBatch(Batch<Dtype>* batch) {
#ifdef DOPPIO_WITH_NVJPEG
  if (decode_on_gpu_) {
    LoadBatchOnGpu(batch);
    return;
  }
#endif
  const int batch_size = this->batch_size_;
  const std::size_t record_count = this->ShapeBatch(batch);
  const std::vector<int>& shape = this->record_shape_;
  Dtype* const data = batch->data.mutable_cpu_data();
  Dtype* const labels = batch->label.mutable_cpu_data();

  // Reading and the random draws stay in order on this thread; decoding and transforming,
  // the costly part, may fan out.
  ReadRecords(batch);
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
  if (skip_corrupt) ReplaceFailures(*batch, transform);
}

#ifdef DOPPIO_WITH_NVJPEG
template <typename Dtype>
void DataLayer<Dtype>::LoadBatchOnGpu(Batch<Dtype>* batch) {
  const std::shared_ptr<GpuContext> gpu =
      this->uploader_.WaitUntilEnabled([this] { return this->prefetch_stopping(); });
  if (gpu == nullptr) return;
  const std::string who = this->Describe();
  const DataTransformer<Dtype>& transformer = *this->transformer_;
  if (!nvjpeg_) {
    nvjpeg_ = std::make_unique<NvjpegDecoder>(*gpu);
    LOG(INFO) << who << ": decoding JPEGs on " << gpu->Describe() << " with nvJPEG's "
              << nvjpeg_->backend() << " decoder";
    const std::vector<float>& mean = transformer.mean_image();
    if (!mean.empty()) {
      mean_image_.Reshape({static_cast<int>(mean.size())});
      std::copy(mean.begin(), mean.end(), mean_image_.mutable_cpu_data());
    }
  }
  const int batch_size = this->batch_size_;
  this->ShapeBatch(batch);
  const std::vector<int>& shape = this->record_shape_;
  Dtype* const labels = batch->label.mutable_cpu_data();
  ReadRecords(batch);
  datums_.resize(batch_size);
  jpegs_.resize(batch_size);
  heights_.resize(batch_size);
  widths_.resize(batch_size);
  windows_.resize(batch_size);
  const TransformationParameter& param = transformer.param();
  // Record `from`'s header and window, with record `into`'s draw, as the batch's `into`.
  auto prepare = [&](int from, int into) {
    const ShardedReader::Record& record = records_[from];
    const std::string where = RecordName(record.key);
    Datum& datum = datums_[into];
    if (!datum.ParseFromArray(record.value.data(), static_cast<int>(record.value.size()))) {
      throw UndecodableRecord(who + ": " + where + " is not a Datum");
    }
    DOPPIO_ENSURE(datum.encoded())
        << who << ": data_param.decode: GPU decodes encoded (JPEG) records, and " << where
        << " holds raw pixels; use decode: CPU";
    int components = 0, height = 0, width = 0;
    std::string reason;
    if (!nvjpeg_->ReadHeader(datum.data(), &components, &height, &width, &reason)) {
      throw UndecodableRecord(who + ": " + where + " does not decode: " + reason);
    }
    if (static_cast<long long>(height) * width > kMaxImagePixels) {
      throw UndecodableRecord(who + ": " + where + " does not decode: its header says " +
                              std::to_string(width) + "x" + std::to_string(height) + " pixels");
    }
    const int channels =
        param.force_color() ? 3 : (param.force_gray() ? 1 : (components == 1 ? 1 : 3));
    const cv::Rect window =
        transformer.CheckedWindow(channels, height, width, draws_[into], where, &shape);
    jpegs_[into] = datum.data();
    heights_[into] = height;
    widths_[into] = width;
    windows_[into] = GpuWindowJob{nullptr,
                                  0,
                                  height,
                                  width,
                                  window.x,
                                  window.y,
                                  window.width,
                                  window.height,
                                  transformer.Mirrors(draws_[into])};
    labels[into] = static_cast<Dtype>(datum.label());
  };
  const bool skip_corrupt = this->layer_param_.data_param().skip_corrupt();
  failures_.assign(batch_size, std::string());
  for (int i = 0; i < batch_size; ++i) {
    try {
      prepare(i, i);
    } catch (const UndecodableRecord& error) {
      if (!skip_corrupt) throw;
      failures_[i] = error.what();
    }
  }
  if (skip_corrupt) ReplaceFailures(*batch, prepare);

  const cudaStream_t stream = this->uploader_.BeginDeviceFill(batch);
  std::string reason;
  DOPPIO_ENSURE(nvjpeg_->Decode(jpegs_, heights_, widths_, shape[0], stream, &reason))
      << who << ": the batch at stream position " << batch->first_position << " ("
      << RecordName(records_[0].key) << " and the " << batch_size - 1
      << " after it) does not decode on the GPU: " << reason;
  for (int i = 0; i < batch_size; ++i) {
    windows_[i].pixels = nvjpeg_->pixels(i);
    windows_[i].pitch = nvjpeg_->pitch(i);
  }
  const std::size_t bytes = windows_.size() * sizeof(GpuWindowJob);
  if (!jobs_ || jobs_->size() != bytes) {
    jobs_ = std::make_unique<SyncedMemory>(bytes);
    jobs_->PinHostMemory();
  }
  std::memcpy(jobs_->mutable_cpu_data(), windows_.data(), bytes);
  jobs_->AsyncGpuPush(*gpu, stream);
  GpuWindowTransform transform = GpuWindowTransformFor(param, shape);
  transform.mean_image = mean_image_.count() > 0 ? mean_image_.gpu_data(*gpu) : nullptr;
  transform.scale = param.scale();
  gpu_transform_windows(transform, static_cast<const GpuWindowJob*>(jobs_->gpu_data(*gpu)),
                        batch_size, batch->data.mutable_gpu_data(*gpu), stream);
  this->uploader_.EndDeviceFill(batch);
}
#endif  // DOPPIO_WITH_NVJPEG

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
