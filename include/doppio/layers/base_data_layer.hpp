#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "doppio/core/layer.hpp"
#ifdef DOPPIO_WITH_CUDA
#include "doppio/data/batch_uploader.hpp"
#endif
#include "doppio/data/data_transformer.hpp"
#include "doppio/data/prefetch.hpp"

namespace doppio {

// The common part of the layers that read records (Data, ImageData): a DataTransformer, a
// background thread that fills `prefetch` batches ahead (data_param.prefetch, as in Caffe),
// optional worker threads that decode and transform the records of a batch in parallel, and
// a Forward that copies a ready batch into the tops (data, and label when there is a second
// top).
//
// Sharding: the subclass reads its share of the records as ShardSequence describes, from
// shard_rank and shard_size (Doppio's fields of data_param / image_data_param).
//
// Seeds: the layer's rng() (seeded by Net from the net seed) yields a base seed drawn in
// LayerSetUp, the same on every rank built with the same net seed. Everything random is
// drawn from it: rand_skip and shuffling (per epoch), and each record's crop and mirror,
// keyed by the record's position in the global stream (DataTransformer::DrawFor). So N ranks
// with batch B see exactly what one process with batch N*B sees. Forward publishes the
// batch's position (Layer::batch_position) for the net's per-sample random layers.
template <typename Dtype>
class BasePrefetchingDataLayer : public Layer<Dtype> {
 public:
  using BlobVec = typename Layer<Dtype>::BlobVec;

  explicit BasePrefetchingDataLayer(const LayerParameter& param) : Layer<Dtype>(param) {}
  ~BasePrefetchingDataLayer() override;

  void LayerSetUp(const BlobVec& bottom, const BlobVec& top) final;
  // The tops take each batch's shape in Forward.
  void Reshape(const BlobVec& bottom, const BlobVec& top) override {}

  int ExactNumBottomBlobs() const override { return 0; }
  int MinTopBlobs() const override { return 1; }
  int MaxTopBlobs() const override { return 2; }
  bool AllowForceBackward(int bottom_index) const override { return false; }

  std::uint64_t batches_per_epoch() const override { return batches_per_epoch_; }
  // Counts the batches Forward has taken, not those the prefetch thread has read ahead:
  // a snapshot taken at any moment resumes at the first batch the net has not seen.
  InputStats input_stats() const override;
  std::optional<std::uint64_t> stream_position() const override {
    return stream_start_ + batches_taken_ * static_cast<std::uint64_t>(batch_size_) *
                               static_cast<std::uint64_t>(shard_size_);
  }
  // Stops the prefetch thread, drops what it read ahead and starts it again at `position`.
  void SeekStream(std::uint64_t position) override;

 protected:
  // The fields every prefetching layer has in its own parameter block (data_param,
  // image_data_param, window_data_param), which LayerSetUp checks. shard_rank, shard_size
  // and threads are Doppio's and live in shard_block (the own block, or data_param for a
  // Caffe block that has no such fields).
  struct ReaderFields {
    const char* block;  // the block's name, for messages
    bool has_batch_size;
    long long batch_size;
    const char* shard_block;
    long long shard_rank, shard_size;
    bool has_threads;
    long long threads;
  };
  virtual ReaderFields Reader() const = 0;
  // Reads the layer's parameters, opens the source and returns the shape {C, H, W} of one
  // transformed record. Runs on the caller's thread before the prefetch thread starts.
  virtual std::vector<int> DataLayerSetUp() = 0;
  // Fills one batch (runs on the prefetch thread).
  virtual void LoadBatch(Batch<Dtype>* batch) = 0;
  // Points the reader at global stream position `position`: this rank's share of the
  // global batch that starts there comes next. Subclasses call StreamFrom, not this.
  virtual void RestartStreamAt(std::uint64_t position) = 0;
  // Gives `batch` batch_size_ records of record_shape_ and as many labels; returns the values
  // of one record.
  std::size_t ShapeBatch(Batch<Dtype>* batch) const;
  // Starts the stream at `position` (DataLayerSetUp: 0 or rand_skip's offset).
  void StreamFrom(std::uint64_t position);
  // Subclasses' destructors must call this before their members go away.
  void StopPrefetching();
  // Whether the prefetch thread is asked to end (LoadBatch may return early then).
  bool prefetch_stopping() const { return prefetcher_->stopping(); }

  void Forward_cpu(const BlobVec& bottom, const BlobVec& top) override;
#ifdef DOPPIO_WITH_CUDA
  // Copies the batch the prefetch thread has already uploaded (device to device).
  void Forward_gpu(const BlobVec& bottom, const BlobVec& top) override;
#endif
  void Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {}

  // Set before DataLayerSetUp runs. threads_: the decoder threads, threads when set, else the
  // threads of the pool current when the layer is set up, which for `doppio` and Python is the
  // process's thread budget (its cores shared among its node's ranks).
  int batch_size_ = 0;
  int shard_rank_ = 0, shard_size_ = 1;
  int threads_ = 1;
  bool output_labels_ = false;
  std::uint64_t base_seed_ = 0;
  std::unique_ptr<DataTransformer<Dtype>> transformer_;
  std::unique_ptr<WorkerPool> workers_;
  // {C, H, W} of every record of every batch.
  std::vector<int> record_shape_;
  // Set by DataLayerSetUp.
  std::uint64_t batches_per_epoch_ = 0;

 private:
  // On the prefetch thread: LoadBatch, then the upload in GPU mode.
  void FillBatch(Batch<Dtype>* batch);
  void StartPrefetching();
  Batch<Dtype>* TakeBatch();
  void CopyToTopsOnHost(const Batch<Dtype>& batch, const BlobVec& top);

#ifdef DOPPIO_WITH_CUDA
 protected:
  // Declared before the prefetcher, whose thread uses it, so that it outlives that thread. A
  // subclass that writes batches on the device uses it in LoadBatch.
  BatchUploader<Dtype> uploader_;

 private:
#endif
  std::unique_ptr<BatchPrefetcher<Dtype>> prefetcher_;
  int prefetch_depth_ = 1;
  // Filled on the prefetch thread, taken on the net's.
  mutable std::mutex stats_mutex_;
  InputStats stats_;
  // The stream position of the first batch, and the batches Forward has taken since.
  std::uint64_t stream_start_ = 0;
  std::uint64_t batches_taken_ = 0;
};

// transform_param with the deprecated transformation fields of data_param /
// image_data_param / window_data_param (scale, mean_file, crop_size, mirror,
// force_encoded_color) moved into it,
// as Caffe's upgrade does. A field set in both places with different values is an Error
// naming the layer and the field.
TransformationParameter MergedTransformParam(const LayerParameter& param, const std::string& who);

}  // namespace doppio
