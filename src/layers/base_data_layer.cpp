#include "doppio/layers/base_data_layer.hpp"

#include <glog/logging.h>

#include <chrono>

#include "doppio/util/thread_pool.hpp"
#include "doppio/util/upgrade_net.hpp"

namespace doppio {

namespace {
// The sub-stream of the base seed that crops and mirrors draw from.
constexpr std::uint64_t kCropMirrorStream = 0xc409;
// The most decoder threads a layer starts.
constexpr int kMaxThreads = 256;
}  // namespace

TransformationParameter MergedTransformParam(const LayerParameter& param, const std::string& who) {
  LayerParameter moved = param;
  MoveDeprecatedTransformFields(who, &moved);
  TransformationParameter merged = moved.transform_param();
  // force_encoded_color is not one of the fields Caffe's upgrade moves; only Data has it.
  if (!param.has_window_data_param() && !param.has_image_data_param() &&
      param.data_param().force_encoded_color()) {
    DOPPIO_ENSURE(!merged.has_force_color() || merged.force_color())
        << who << ": data_param.force_encoded_color (deprecated) and transform_param.force_color "
        << "disagree; set it in transform_param only";
    merged.set_force_color(true);
  }
  return merged;
}

template <typename Dtype>
BasePrefetchingDataLayer<Dtype>::~BasePrefetchingDataLayer() {
  StopPrefetching();
}

template <typename Dtype>
void BasePrefetchingDataLayer<Dtype>::StopPrefetching() {
  if (prefetcher_) prefetcher_->Stop();
}

template <typename Dtype>
void BasePrefetchingDataLayer<Dtype>::LayerSetUp(const BlobVec& bottom, const BlobVec& top) {
  const std::string who = this->Describe();
  const LayerParameter& param = this->layer_param_;
  const ReaderFields fields = Reader();
  const std::string block = fields.block, shard_block = fields.shard_block;
  DOPPIO_ENSURE(fields.has_batch_size) << who << ": " << block << ".batch_size is not set";
  const long long batch_size = fields.batch_size, shard_rank = fields.shard_rank,
                  shard_size = fields.shard_size;
  const ThreadPool* budget = ThreadPool::Current();
  const long long threads =
      fields.has_threads ? fields.threads : std::min(kMaxThreads, budget ? budget->threads() : 1);
  DOPPIO_ENSURE(batch_size > 0 && batch_size <= (1 << 24))
      << who << ": " << block << ".batch_size must be at least 1, got " << batch_size;
  DOPPIO_ENSURE(shard_size >= 1) << who << ": " << shard_block
                                 << ".shard_size must be at least 1, got " << shard_size;
  DOPPIO_ENSURE(shard_rank >= 0 && shard_rank < shard_size)
      << who << ": " << shard_block << ".shard_rank " << shard_rank << " is outside [0, "
      << shard_size << ")";
  DOPPIO_ENSURE(threads >= 1 && threads <= kMaxThreads)
      << who << ": " << shard_block << ".threads must be between 1 and " << kMaxThreads << ", got "
      << threads;
  // Caffe reads the prefetch depth from data_param for every prefetching layer.
  const long long depth = param.data_param().prefetch();
  DOPPIO_ENSURE(depth >= 1 && depth <= 1024)
      << who << ": data_param.prefetch must be between 1 and 1024, got " << depth;
  batch_size_ = static_cast<int>(batch_size);
  shard_rank_ = static_cast<int>(shard_rank);
  shard_size_ = static_cast<int>(shard_size);
  threads_ = static_cast<int>(threads);
  output_labels_ = top.size() > 1;

  base_seed_ = this->rng().engine()();
  transformer_ =
      std::make_unique<DataTransformer<Dtype>>(MergedTransformParam(param, who), this->phase_, who);
  transformer_->set_seed(DeriveSeed(base_seed_, kCropMirrorStream));
  workers_ = std::make_unique<WorkerPool>(threads_);

  record_shape_ = DataLayerSetUp();
  CHECK_EQ(record_shape_.size(), 3u);
  std::vector<int> data_shape = {batch_size_, record_shape_[0], record_shape_[1], record_shape_[2]};
  top[0]->Reshape(data_shape);
  if (output_labels_) top[1]->Reshape({batch_size_});
  LOG(INFO) << who << ": output data size " << top[0]->shape_string() << ", " << threads_
            << " decoder thread" << (threads_ > 1 ? "s" : "")
            << (fields.has_threads ? "" : " (the process's CPU threads)")
            << (shard_size_ > 1 ? ", shard " + std::to_string(shard_rank_) + " of " +
                                      std::to_string(shard_size_)
                                : std::string());

  prefetch_depth_ = static_cast<int>(depth);
  StartPrefetching();
}

template <typename Dtype>
void BasePrefetchingDataLayer<Dtype>::StartPrefetching() {
  prefetcher_ = std::make_unique<BatchPrefetcher<Dtype>>(
      prefetch_depth_, [this](Batch<Dtype>* batch) { FillBatch(batch); });
  prefetcher_->Start();
}

template <typename Dtype>
std::size_t BasePrefetchingDataLayer<Dtype>::ShapeBatch(Batch<Dtype>* batch) const {
  const std::vector<int>& shape = record_shape_;
  batch->data.Reshape({batch_size_, shape[0], shape[1], shape[2]});
  batch->label.Reshape({batch_size_});
  return static_cast<std::size_t>(shape[0]) * shape[1] * shape[2];
}

template <typename Dtype>
void BasePrefetchingDataLayer<Dtype>::StreamFrom(std::uint64_t position) {
  stream_start_ = position;
  batches_taken_ = 0;
  RestartStreamAt(position);
}

template <typename Dtype>
void BasePrefetchingDataLayer<Dtype>::SeekStream(std::uint64_t position) {
  StopPrefetching();
  prefetcher_.reset();
  StreamFrom(position);
  StartPrefetching();
}

template <typename Dtype>
InputStats BasePrefetchingDataLayer<Dtype>::input_stats() const {
  std::lock_guard<std::mutex> lock(stats_mutex_);
  return stats_;
}

template <typename Dtype>
void BasePrefetchingDataLayer<Dtype>::FillBatch(Batch<Dtype>* batch) {
  const auto start = std::chrono::steady_clock::now();
  LoadBatch(batch);
  // A fill that Stop cut short (LoadBatch may return early then) made nothing to upload or
  // count, and the prefetcher drops it.
  if (prefetch_stopping()) return;
#ifdef DOPPIO_WITH_CUDA
  uploader_.Upload(batch);
#endif
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::lock_guard<std::mutex> lock(stats_mutex_);
  stats_.records += static_cast<std::uint64_t>(batch->data.shape(0));
  stats_.fill_seconds += seconds;
}

template <typename Dtype>
Batch<Dtype>* BasePrefetchingDataLayer<Dtype>::TakeBatch() {
  // Only this thread takes batches, so a batch ready now is still there in Take.
  const bool waits = !prefetcher_->ready();
  const auto start = std::chrono::steady_clock::now();
  try {
    Batch<Dtype>* batch = prefetcher_->Take();
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::lock_guard<std::mutex> lock(stats_mutex_);
    ++stats_.batches;
    if (waits) {
      ++stats_.waits;
      stats_.wait_seconds += seconds;
    }
    return batch;
  } catch (const Error& error) {
    const std::string who = this->Describe();
    if (std::string(error.what()).find(who) != std::string::npos) throw;
    throw Error(who + ": reading a batch failed: " + error.what(), error.code());
  }
}

template <typename Dtype>
void BasePrefetchingDataLayer<Dtype>::CopyToTopsOnHost(const Batch<Dtype>& batch,
                                                       const BlobVec& top) {
  top[0]->Reshape(batch.data.shape());
  std::memcpy(top[0]->mutable_cpu_data(), batch.data.cpu_data(),
              batch.data.count() * sizeof(Dtype));
  if (output_labels_) {
    top[1]->Reshape(batch.label.shape());
    std::memcpy(top[1]->mutable_cpu_data(), batch.label.cpu_data(),
                batch.label.count() * sizeof(Dtype));
  }
}

template <typename Dtype>
void BasePrefetchingDataLayer<Dtype>::Forward_cpu(const BlobVec& bottom, const BlobVec& top) {
  Batch<Dtype>* batch = TakeBatch();
  ++batches_taken_;
  this->batch_position().Set(batch->first_position);
  CopyToTopsOnHost(*batch, top);
  prefetcher_->Release(batch);
}

#ifdef DOPPIO_WITH_CUDA
template <typename Dtype>
void BasePrefetchingDataLayer<Dtype>::Forward_gpu(const BlobVec& bottom, const BlobVec& top) {
  uploader_.Enable(this->gpu_context());
  Batch<Dtype>* batch = TakeBatch();
  ++batches_taken_;
  this->batch_position().Set(batch->first_position);
  try {
    if (!uploader_.CopyToTops(*batch, top[0], output_labels_ ? top[1] : nullptr)) {
      CopyToTopsOnHost(*batch, top);
    }
  } catch (...) {
    prefetcher_->Release(batch);
    throw;
  }
  prefetcher_->Release(batch);
}
#endif  // DOPPIO_WITH_CUDA

DOPPIO_INSTANTIATE_CLASS(BasePrefetchingDataLayer);

}  // namespace doppio
