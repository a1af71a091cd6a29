#include "doppio/layers/memory_data_layer.hpp"

#include <climits>

#include "doppio/core/layer_registry.hpp"
#include "doppio/util/math_functions.hpp"

namespace doppio {

template <typename Dtype>
void MemoryDataLayer<Dtype>::LayerSetUp(const BlobVec& bottom, const BlobVec& top) {
  const MemoryDataParameter& param = this->layer_param_.memory_data_param();
  const auto positive = [this](const char* field, std::uint32_t value) {
    DOPPIO_ENSURE(value > 0 && value <= INT_MAX)
        << this->Describe() << ": memory_data_param." << field << " must be given and positive";
    return static_cast<int>(value);
  };
  batch_size_ = positive("batch_size", param.batch_size());
  channels_ = positive("channels", param.channels());
  height_ = positive("height", param.height());
  width_ = positive("width", param.width());
  DOPPIO_ENSURE(static_cast<long long>(channels_) * height_ * width_ <= INT_MAX)
      << this->Describe() << ": memory_data_param items of " << channels_ << "x" << height_ << "x"
      << width_ << " values are too large";
  item_size_ = channels_ * height_ * width_;
  // Caffe applies transform_param only to the data its AddDatumVector/AddMatVector take, never
  // to arrays given to Reset, the one way to feed this layer here.
  DOPPIO_ENSURE(!this->layer_param_.has_transform_param())
      << this->Describe() << ": transform_param is not supported by MemoryData, which passes the "
      << "arrays given to Reset through unchanged; transform the data before feeding it";
}

template <typename Dtype>
void MemoryDataLayer<Dtype>::Reshape(const BlobVec& bottom, const BlobVec& top) {
  top[0]->Reshape({batch_size_, channels_, height_, width_});
  top[1]->Reshape(std::vector<int>{batch_size_});
}

template <typename Dtype>
void MemoryDataLayer<Dtype>::Reset(const Dtype* data, const Dtype* labels, int n) {
  DOPPIO_ENSURE(data != nullptr && labels != nullptr)
      << this->Describe() << ": Reset needs both a data and a label array";
  DOPPIO_ENSURE(n > 0 && n % batch_size_ == 0)
      << this->Describe() << ": Reset got " << n << " items; n must be a positive multiple of "
      << "the batch size " << batch_size_ << " (memory_data_param.batch_size)";
  data_ = data;
  labels_ = labels;
  n_ = n;
  pos_ = 0;
}

template <typename Dtype>
void MemoryDataLayer<Dtype>::set_batch_size(int batch_size) {
  DOPPIO_ENSURE(batch_size > 0) << this->Describe() << ": the batch size must be positive, got "
                                << batch_size;
  DOPPIO_ENSURE(data_ == nullptr || (n_ % batch_size == 0 && pos_ % batch_size == 0))
      << this->Describe() << ": cannot change the batch size to " << batch_size << " with " << n_
      << " items fed and the next batch at item " << pos_
      << "; both must be multiples of it (Reset first)";
  batch_size_ = batch_size;
}

template <typename Dtype>
void MemoryDataLayer<Dtype>::Forward_cpu(const BlobVec& bottom, const BlobVec& top) {
  DOPPIO_ENSURE(data_ != nullptr)
      << this->Describe() << " has no data: feed it with MemoryDataLayer::Reset(data, labels, n) "
      << "before running the net";
  cpu_copy(batch_size_ * item_size_, data_ + static_cast<long long>(pos_) * item_size_,
           top[0]->mutable_cpu_data());
  cpu_copy(batch_size_, labels_ + pos_, top[1]->mutable_cpu_data());
  pos_ = (pos_ + batch_size_) % n_;
}

DOPPIO_INSTANTIATE_CLASS(MemoryDataLayer);
REGISTER_LAYER_CLASS_WITH_TRAITS(MemoryData, LayerTraits().ReadsData());

}  // namespace doppio
