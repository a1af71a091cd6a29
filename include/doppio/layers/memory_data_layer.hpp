#pragma once

#include <vector>

#include "doppio/core/layer.hpp"

namespace doppio {

// Caffe's MemoryData: a data source fed from C++. Its two tops are the data, (batch_size,
// channels, height, width) from memory_data_param, and the labels, (batch_size). The caller
// hands it arrays of n items with Reset; each Forward copies the next batch_size items into
// the tops, wrapping around to the first after the last. Nothing is transformed
// (transform_param is refused), and the arrays are not copied: as in Caffe, they must outlive
// their use by the net.
template <typename Dtype>
class MemoryDataLayer : public Layer<Dtype> {
 public:
  using BlobVec = typename Layer<Dtype>::BlobVec;

  explicit MemoryDataLayer(const LayerParameter& param) : Layer<Dtype>(param) {}
  void LayerSetUp(const BlobVec& bottom, const BlobVec& top) override;
  void Reshape(const BlobVec& bottom, const BlobVec& top) override;
  const char* type() const override { return "MemoryData"; }

  int ExactNumBottomBlobs() const override { return 0; }
  int ExactNumTopBlobs() const override { return 2; }

  // Feeds n items: `data` holds n * channels * height * width values, item after item, and
  // `labels` n values. n must be a positive multiple of the batch size. The next Forward
  // starts at the first item.
  void Reset(const Dtype* data, const Dtype* labels, int n);
  // Changes the number of items per Forward. With data fed, its n must be a multiple of the new
  // size, and so must the position of the next batch.
  void set_batch_size(int batch_size);

  int batch_size() const { return batch_size_; }
  int channels() const { return channels_; }
  int height() const { return height_; }
  int width() const { return width_; }

 protected:
  void Forward_cpu(const BlobVec& bottom, const BlobVec& top) override;
  // A data source: nothing to propagate.
  void Backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {}

 private:
  int batch_size_ = 0;
  int channels_ = 0, height_ = 0, width_ = 0;
  int item_size_ = 0;  // channels * height * width
  const Dtype* data_ = nullptr;
  const Dtype* labels_ = nullptr;
  int n_ = 0;
  int pos_ = 0;  // the first item of the next batch
};

}  // namespace doppio
