#pragma once

#include <string>
#include <utility>
#include <vector>

#include "doppio/data/shard.hpp"
#include "doppio/layers/base_data_layer.hpp"

namespace doppio {

// Reads images listed in a text file, one "path label" per line (the label is the last
// word, so paths may hold spaces; blank lines are skipped), through OpenCV.
//
// image_data_param: source (the list), root_folder (prefixed to every path), batch_size,
// shuffle (a new order every epoch, seeded, the same on every rank), rand_skip,
// new_height / new_width (resize, both or neither), is_color (3-channel BGR, or 1-channel
// gray), and Doppio's shard_rank / shard_size / threads. The list is sharded
// block-cyclically like the Data layer's records. A missing or unreadable image is an Error
// naming the file and its line in the list.
template <typename Dtype>
class ImageDataLayer : public BasePrefetchingDataLayer<Dtype> {
 public:
  explicit ImageDataLayer(const LayerParameter& param) : BasePrefetchingDataLayer<Dtype>(param) {}
  ~ImageDataLayer() override;
  const char* type() const override { return "ImageData"; }

 protected:
  typename BasePrefetchingDataLayer<Dtype>::ReaderFields Reader() const override;
  std::vector<int> DataLayerSetUp() override;
  void LoadBatch(Batch<Dtype>* batch) override;
  void RestartStreamAt(std::uint64_t position) override;

 private:
  struct Entry {
    std::string path;
    int label;
    int line;
  };
  // The list entry at stream position `position`.
  int EntryAt(std::uint64_t position);
  // Reads entry `index` (Error naming the file and line when it cannot).
  void ReadEntry(int index, cv::Mat* image) const;
  std::string EntryName(int index) const;

  std::vector<Entry> entries_;
  std::unique_ptr<ShardSequence> sequence_;
  std::uint64_t batch_k_ = 0;
  // The order of the current epoch when shuffling.
  std::vector<int> order_;
  std::uint64_t order_epoch_ = ~std::uint64_t(0);
  std::vector<int> batch_entries_;
  std::vector<typename DataTransformer<Dtype>::Draw> draws_;
};

}  // namespace doppio
