#include "doppio/layers/image_data_layer.hpp"

#include <glog/logging.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <numeric>

#include <opencv2/core.hpp>

#include "doppio/core/layer_registry.hpp"
#include "doppio/data/image_io.hpp"

namespace doppio {

template <typename Dtype>
ImageDataLayer<Dtype>::~ImageDataLayer() {
  this->StopPrefetching();
}

template <typename Dtype>
std::string ImageDataLayer<Dtype>::EntryName(int index) const {
  const Entry& entry = entries_[index];
  return "image '" + this->layer_param_.image_data_param().root_folder() + entry.path + "' (line " +
         std::to_string(entry.line) + " of '" + this->layer_param_.image_data_param().source() +
         "')";
}

template <typename Dtype>
void ImageDataLayer<Dtype>::ReadEntry(int index, cv::Mat* image) const {
  const ImageDataParameter& param = this->layer_param_.image_data_param();
  *image =
      ReadImage(param.root_folder() + entries_[index].path, static_cast<int>(param.new_height()),
                static_cast<int>(param.new_width()), param.is_color());
  DOPPIO_ENSURE(!image->empty()) << this->Describe() << ": cannot read " << EntryName(index)
                                 << ": the file is missing or is not an image OpenCV decodes";
}

template <typename Dtype>
int ImageDataLayer<Dtype>::EntryAt(std::uint64_t position) {
  const std::uint64_t n = entries_.size();
  const std::uint64_t index = position % n;
  if (!this->layer_param_.image_data_param().shuffle()) return static_cast<int>(index);
  const std::uint64_t epoch = position / n;
  if (epoch != order_epoch_) {
    // Each epoch's order depends only on the base seed and the epoch, so every rank agrees.
    order_.resize(n);
    std::iota(order_.begin(), order_.end(), 0);
    Rng rng(DeriveSeed(this->base_seed_, 0x5f0ff1e + epoch));
    for (std::uint64_t i = n - 1; i > 0; --i) std::swap(order_[i], order_[rng.Below(i + 1)]);
    order_epoch_ = epoch;
  }
  return order_[index];
}

template <typename Dtype>
typename BasePrefetchingDataLayer<Dtype>::ReaderFields ImageDataLayer<Dtype>::Reader() const {
  const auto& p = this->layer_param_.image_data_param();
  return {"image_data_param", true,           p.batch_size(),  "image_data_param",
          p.shard_rank(),     p.shard_size(), p.has_threads(), p.threads()};
}

template <typename Dtype>
std::vector<int> ImageDataLayer<Dtype>::DataLayerSetUp() {
  const std::string who = this->Describe();
  const ImageDataParameter& param = this->layer_param_.image_data_param();
  DOPPIO_ENSURE(param.has_source() && !param.source().empty())
      << who << ": image_data_param.source (the list of images) is not set";
  DOPPIO_ENSURE((param.new_height() > 0) == (param.new_width() > 0))
      << who << ": image_data_param.new_height and new_width must be given together (got "
      << param.new_height() << " and " << param.new_width() << ")";

  std::ifstream list(param.source());
  DOPPIO_ENSURE(list.good()) << who << ": image_data_param.source '" << param.source()
                             << "': cannot open (" << std::strerror(errno) << ")";
  std::string line;
  int line_number = 0;
  while (std::getline(list, line)) {
    ++line_number;
    while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.pop_back();
    std::size_t start = 0;
    while (start < line.size() && std::isspace(static_cast<unsigned char>(line[start]))) ++start;
    if (start == line.size()) continue;
    const std::size_t split = line.find_last_of(" \t");
    DOPPIO_ENSURE(split != std::string::npos && split > start)
        << who << ": " << param.source() << ":" << line_number << ": expected 'path label', got '"
        << line << "'";
    const std::string label_text = line.substr(split + 1);
    char* end = nullptr;
    errno = 0;
    const long label = std::strtol(label_text.c_str(), &end, 10);
    DOPPIO_ENSURE(*end == '\0' && errno == 0 && label >= INT32_MIN && label <= INT32_MAX)
        << who << ": " << param.source() << ":" << line_number << ": the label '" << label_text
        << "' is not an integer (expected 'path label')";
    std::size_t path_end = split;
    while (path_end > start && std::isspace(static_cast<unsigned char>(line[path_end - 1]))) {
      --path_end;
    }
    entries_.push_back(
        {line.substr(start, path_end - start), static_cast<int>(label), line_number});
  }
  DOPPIO_ENSURE(!entries_.empty())
      << who << ": the list '" << param.source() << "' names no images";

  std::uint64_t offset = 0;
  if (param.rand_skip() > 0) {
    Rng skip_rng(DeriveSeed(this->base_seed_, 0x5eed5));
    offset = skip_rng.Below(param.rand_skip());
  }
  this->StreamFrom(offset);
  this->batches_per_epoch_ = sequence_->batches_per_epoch();
  LOG(INFO) << who << ": " << entries_.size() << " images in '" << param.source() << "', "
            << this->batches_per_epoch_ << " batches per epoch";

  const int first = EntryAt(sequence_->Position(0, 0));
  cv::Mat image;
  ReadEntry(first, &image);
  return this->transformer_->InferShape(image, EntryName(first));
}

template <typename Dtype>
void ImageDataLayer<Dtype>::RestartStreamAt(std::uint64_t position) {
  sequence_ = std::make_unique<ShardSequence>(this->shard_rank_, this->shard_size_,
                                              this->batch_size_, entries_.size(), position);
  batch_k_ = 0;
}

template <typename Dtype>
void ImageDataLayer<Dtype>::LoadBatch(Batch<Dtype>* batch) {
  const int batch_size = this->batch_size_;
  const std::size_t record_count = this->ShapeBatch(batch);
  const std::vector<int>& shape = this->record_shape_;
  Dtype* const data = batch->data.mutable_cpu_data();
  Dtype* const labels = batch->label.mutable_cpu_data();
  batch_entries_.resize(batch_size);
  draws_.resize(batch_size);
  for (int i = 0; i < batch_size; ++i) {
    const std::uint64_t position = sequence_->Position(batch_k_, i);
    batch_entries_[i] = EntryAt(position);
    draws_[i] = this->transformer_->DrawFor(position);
  }
  batch->first_position = sequence_->Position(batch_k_, 0);
  ++batch_k_;
  this->workers_->For(batch_size, [&](int i) {
    const int index = batch_entries_[i];
    cv::Mat image;
    ReadEntry(index, &image);
    this->transformer_->Transform(image, draws_[i], data + record_count * i, EntryName(index),
                                  &shape);
    labels[i] = static_cast<Dtype>(entries_[index].label);
  });
}

namespace {
// Each rank reads its own block of every global batch of the list (ShardSequence).
void ShardImageDataParam(LayerParameter* param, int rank, int size) {
  param->mutable_image_data_param()->set_shard_rank(rank);
  param->mutable_image_data_param()->set_shard_size(size);
}
}  // namespace

DOPPIO_INSTANTIATE_CLASS(ImageDataLayer);
REGISTER_LAYER_CLASS_WITH_TRAITS(ImageData,
                                 LayerTraits().ReadsData().Shardable(ShardImageDataParam));

}  // namespace doppio
