#pragma once

#include <memory>
#include <string>
#include <vector>

#include "doppio/data/db.hpp"
#include "doppio/data/shard.hpp"
#include "doppio/device/nvjpeg_decoder.hpp"  // DOPPIO_WITH_NVJPEG where there is nvJPEG
#include "doppio/layers/base_data_layer.hpp"
#ifdef DOPPIO_WITH_NVJPEG
#include "doppio/core/synced_memory.hpp"
#include "doppio/device/window_transform_gpu.hpp"
#endif

namespace doppio {

// Reads Datum records from an LMDB (Caffe's format: raw uint8 data, float_data, or encoded
// JPEG/PNG) in the background, transforms them, and outputs batches of data and labels.
//
// data_param: source, batch_size, backend (LMDB; LEVELDB is refused with an Error; unset
// means LMDB), rand_skip (a random start, the same on every rank), prefetch (batches read
// ahead), and Doppio's shard_rank / shard_size / threads / skip_corrupt / decode (GPU: JPEGs
// decoded with nvJPEG and transformed on the layer's GPU, which the batch then stays on; the
// same windows and mirrors as on the CPU, the pixels within a decoder's rounding of them).
// Records are read in key
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
  // Refuses data_param.decode: GPU, whose batches are made on the GPU only.
  void Forward_cpu(const typename BasePrefetchingDataLayer<Dtype>::BlobVec& bottom,
                   const typename BasePrefetchingDataLayer<Dtype>::BlobVec& top) override;

 private:
  std::string RecordName(std::string_view key) const;
  // The batch's records and their draws, in stream order (on the prefetch thread).
  void ReadRecords(Batch<Dtype>* batch);
  // With skip_corrupt: each record of failures_ that did not decode takes the place of the
  // nearest earlier one of the batch that does, `redo(from, into)` making record `from`
  // the batch's record `into` with into's draw.
  void ReplaceFailures(const Batch<Dtype>& batch, const std::function<void(int, int)>& redo);
#ifdef DOPPIO_WITH_NVJPEG
  // data_param.decode: GPU. Waits for the first GPU Forward, which says which GPU.
  void LoadBatchOnGpu(Batch<Dtype>* batch);
#endif

  std::unique_ptr<db::DB> db_;
  std::unique_ptr<ShardedReader> reader_;
  // Per-batch scratch, reused.
  std::vector<ShardedReader::Record> records_;
  std::vector<typename DataTransformer<Dtype>::Draw> draws_;
  std::vector<std::string> failures_;
  // Records replaced since the layer was set up (data_param.skip_corrupt).
  long long skipped_ = 0;
  bool decode_on_gpu_ = false;
#ifdef DOPPIO_WITH_NVJPEG
  std::unique_ptr<NvjpegDecoder> nvjpeg_;
  // Per-batch scratch of the GPU decode: the records' Datums, JPEG bytes (in the Datums),
  // sizes, and windows (their device copy in jobs_, made pinned).
  std::vector<Datum> datums_;
  std::vector<std::string_view> jpegs_;
  std::vector<int> heights_, widths_;
  std::vector<GpuWindowJob> windows_;
  std::unique_ptr<SyncedMemory> jobs_;
  // The mean file, on the device.
  Blob<float> mean_image_;
#endif
};

}  // namespace doppio
