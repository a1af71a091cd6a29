#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "doppio/core/layer.hpp"
#include "doppio/data/shard.hpp"

namespace doppio {

// Caffe's HDF5Data: reads samples from HDF5 files listed in a text file (one path a line,
// blank lines skipped, relative paths from the working directory as in Caffe). Each top
// reads the dataset of its name; the first axis of a dataset numbers the samples (its rows),
// and the tops of one file must have as many rows. A top's shape is batch_size followed by
// the dataset's other axes, the same in every file. Values of any integer or floating-point
// type are converted to the net's type.
//
// hdf5_data_param: source (the list), batch_size, shuffle. The files' rows form one stream,
// file after file in list order, sharded across ranks block-cyclically like the Data layer's
// records (ShardSequence), so N ranks read together what one process reads in a batch N
// times larger. The shard comes from data_param.shard_rank / shard_size (the data-parallel
// code sets them; hdf5_data_param has no field for it in Caffe's schema). With shuffle, as in
// Caffe, every epoch visits the files in a new order and each file's rows in a new order;
// both orders are drawn from the layer's seed and the epoch (and the file), never from the
// rank, so every rank count sees the same stream.
//
// Caffe loads one file at a time into memory; so does this layer.
template <typename Dtype>
class HDF5DataLayer : public Layer<Dtype> {
 public:
  using BlobVec = typename Layer<Dtype>::BlobVec;

  explicit HDF5DataLayer(const LayerParameter& param) : Layer<Dtype>(param) {}
  const char* type() const override { return "HDF5Data"; }

  void LayerSetUp(const BlobVec& bottom, const BlobVec& top) override;
  void Reshape(const BlobVec& bottom, const BlobVec& top) override {}

  int ExactNumBottomBlobs() const override { return 0; }
  int MinTopBlobs() const override { return 1; }
  bool AllowForceBackward(int bottom_index) const override { return false; }

  // Both known after set-up (0 before).
  std::uint64_t batches_per_epoch() const override {
    return sequence_ ? sequence_->batches_per_epoch() : 0;
  }
  std::optional<std::uint64_t> stream_position() const override {
    if (!sequence_) return 0;
    return stream_start_ + batch_k_ * static_cast<std::uint64_t>(sequence_->batch()) *
                               static_cast<std::uint64_t>(sequence_->size());
  }
  void SeekStream(std::uint64_t position) override;

 protected:
  void Forward_cpu(const BlobVec& bottom, const BlobVec& top) override;
  void Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {}

 private:
  struct File {
    std::string path;
    int line;  // in the list
    std::uint64_t rows;
  };
  // "file 'PATH' (line N of 'LIST')", for messages.
  std::string FileName(int file) const;
  // Reads the list and every file's shapes; checks them against each other.
  void ScanFiles();
  // Makes `file`'s rows in the order of `epoch` the loaded ones, reading it when needed.
  void LoadFile(int file, std::uint64_t epoch);
  // Points `row` (into the loaded file) at stream position `position`.
  void Locate(std::uint64_t position, std::uint64_t* row);

  std::vector<std::string> datasets_;  // the tops' names
  std::vector<File> files_;
  // Per top: the shape of one sample (a dataset's axes after the first).
  std::vector<std::vector<int>> sample_shapes_;
  std::uint64_t rows_ = 0;  // in all files
  bool shuffle_ = false;
  std::uint64_t base_seed_ = 0;
  std::unique_ptr<ShardSequence> sequence_;
  std::uint64_t stream_start_ = 0;
  std::uint64_t batch_k_ = 0;

  // The file order of epoch `order_epoch_` and where each of its files starts in the epoch.
  std::uint64_t order_epoch_ = ~std::uint64_t(0);
  std::vector<int> file_order_;
  std::vector<std::uint64_t> file_starts_;
  // The loaded file: its values per top, and its row order in epoch `loaded_epoch_`.
  int loaded_file_ = -1;
  std::uint64_t loaded_epoch_ = ~std::uint64_t(0);
  std::vector<std::vector<Dtype>> loaded_;
  std::vector<std::uint64_t> row_order_;
};

}  // namespace doppio
