#include "doppio/layers/hdf5_data_layer.hpp"

#include <glog/logging.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cstring>
#include <fstream>
#include <numeric>

#include "doppio/core/layer_registry.hpp"
#include "doppio/util/hdf5.hpp"

namespace doppio {

namespace {
// Sub-streams of the layer's base seed: each epoch's file order, and each file's row order in
// an epoch.
constexpr std::uint64_t kFileOrderStream = 0xf11e5000;
constexpr std::uint64_t kRowOrderStream = 0x70705000;

// "2 x 3", or "1" for samples that are single values.
std::string SampleShapeString(const std::vector<int>& shape) {
  std::string text;
  for (int d : shape) text += (text.empty() ? "" : " x ") + std::to_string(d);
  return text.empty() ? "1" : text;
}

template <typename Index>
void Shuffle(std::vector<Index>* order, std::uint64_t seed) {
  Rng rng(seed);
  for (std::size_t i = order->size(); i > 1; --i) {
    std::swap((*order)[i - 1], (*order)[rng.Below(i)]);
  }
}
}  // namespace

template <typename Dtype>
std::string HDF5DataLayer<Dtype>::FileName(int file) const {
  return "file '" + files_[file].path + "' (line " + std::to_string(files_[file].line) + " of '" +
         this->layer_param_.hdf5_data_param().source() + "')";
}

template <typename Dtype>
void HDF5DataLayer<Dtype>::ScanFiles() {
  const std::string who = this->Describe();
  const std::string& source = this->layer_param_.hdf5_data_param().source();
  std::ifstream list(source);
  DOPPIO_ENSURE(list.good()) << who << ": hdf5_data_param.source '" << source << "': cannot open ("
                             << std::strerror(errno) << ")";
  std::string line;
  int line_number = 0;
  while (std::getline(list, line)) {
    ++line_number;
    while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.pop_back();
    std::size_t start = 0;
    while (start < line.size() && std::isspace(static_cast<unsigned char>(line[start]))) ++start;
    if (start == line.size()) continue;
    files_.push_back({line.substr(start), line_number, 0});
  }
  DOPPIO_ENSURE(!files_.empty()) << who << ": the list '" << source << "' names no HDF5 files";

  sample_shapes_.resize(datasets_.size());
  for (int f = 0; f < static_cast<int>(files_.size()); ++f) {
    std::vector<std::vector<std::uint64_t>> shapes;
    try {
      Hdf5Reader reader(files_[f].path);
      for (const std::string& dataset : datasets_) {
        DOPPIO_ENSURE(reader.Has(dataset))
            << "has no dataset '" << dataset << "' (each top reads the dataset of its name)";
        shapes.push_back(reader.Shape(dataset));
      }
    } catch (const Error& error) {
      throw Error(who + ": " + FileName(f) + ": " + error.what());
    }
    for (std::size_t i = 0; i < datasets_.size(); ++i) {
      const std::vector<std::uint64_t>& shape = shapes[i];
      DOPPIO_ENSURE(!shape.empty())
          << who << ": " << FileName(f) << ": dataset '" << datasets_[i]
          << "' is a single value; HDF5Data reads samples along a dataset's first axis";
      DOPPIO_ENSURE(shape[0] == shapes[0][0])
          << who << ": " << FileName(f) << ": dataset '" << datasets_[i] << "' has " << shape[0]
          << " rows but dataset '" << datasets_[0] << "' has " << shapes[0][0]
          << "; the datasets of one file must hold as many samples";
      std::vector<int> sample;
      for (std::size_t d = 1; d < shape.size(); ++d) {
        DOPPIO_ENSURE(shape[d] <= static_cast<std::uint64_t>(INT_MAX))
            << who << ": " << FileName(f) << ": dataset '" << datasets_[i] << "': axis " << d
            << " of " << shape[d] << " is too long for a blob";
        sample.push_back(static_cast<int>(shape[d]));
      }
      if (f == 0) {
        sample_shapes_[i] = sample;
      } else {
        DOPPIO_ENSURE(sample == sample_shapes_[i])
            << who << ": " << FileName(f) << ": dataset '" << datasets_[i]
            << "' holds samples of shape " << SampleShapeString(sample) << " (" << sample.size()
            << " axes after the first), but " << FileName(0) << " holds samples of shape "
            << SampleShapeString(sample_shapes_[i]) << " (" << sample_shapes_[i].size() << " axes)";
      }
    }
    files_[f].rows = shapes[0][0];
    rows_ += files_[f].rows;
  }
  DOPPIO_ENSURE(rows_ > 0) << who << ": the files listed in '" << source << "' hold no samples";
}

template <typename Dtype>
void HDF5DataLayer<Dtype>::LayerSetUp(const BlobVec& bottom, const BlobVec& top) {
  const std::string who = this->Describe();
  const HDF5DataParameter& param = this->layer_param_.hdf5_data_param();
  DOPPIO_ENSURE(param.has_source() && !param.source().empty())
      << who << ": hdf5_data_param.source (the list of HDF5 files) is not set";
  DOPPIO_ENSURE(param.batch_size() >= 1 && param.batch_size() <= (1u << 24))
      << who << ": hdf5_data_param.batch_size must be at least 1, got " << param.batch_size();
  const DataParameter& shard = this->layer_param_.data_param();
  DOPPIO_ENSURE(shard.shard_size() >= 1)
      << who << ": data_param.shard_size must be at least 1, got " << shard.shard_size();
  DOPPIO_ENSURE(shard.shard_rank() >= 0 && shard.shard_rank() < shard.shard_size())
      << who << ": data_param.shard_rank " << shard.shard_rank() << " is outside [0, "
      << shard.shard_size() << ")";
  datasets_.assign(this->layer_param_.top().begin(), this->layer_param_.top().end());
  ScanFiles();

  shuffle_ = param.shuffle();
  base_seed_ = this->rng().engine()();
  const int batch = static_cast<int>(param.batch_size());
  sequence_ = std::make_unique<ShardSequence>(shard.shard_rank(), shard.shard_size(), batch, rows_);
  SeekStream(0);
  for (std::size_t i = 0; i < top.size(); ++i) {
    std::vector<int> shape = {batch};
    shape.insert(shape.end(), sample_shapes_[i].begin(), sample_shapes_[i].end());
    top[i]->Reshape(shape);
  }
  LOG(INFO) << who << ": " << rows_ << " samples in " << files_.size()
            << " HDF5 file(s) listed in '" << param.source() << "', " << batches_per_epoch()
            << " batches per epoch" << (shuffle_ ? ", shuffled" : "")
            << (shard.shard_size() > 1 ? ", shard " + std::to_string(shard.shard_rank()) + " of " +
                                             std::to_string(shard.shard_size())
                                       : std::string());
}

template <typename Dtype>
void HDF5DataLayer<Dtype>::SeekStream(std::uint64_t position) {
  sequence_ = std::make_unique<ShardSequence>(sequence_->rank(), sequence_->size(),
                                              sequence_->batch(), rows_, position);
  stream_start_ = position;
  batch_k_ = 0;
}

template <typename Dtype>
void HDF5DataLayer<Dtype>::LoadFile(int file, std::uint64_t epoch) {
  if (file != loaded_file_) {
    loaded_.clear();
    loaded_file_ = -1;
    try {
      Hdf5Reader reader(files_[file].path);
      for (const std::string& dataset : datasets_) loaded_.push_back(reader.Read<Dtype>(dataset));
    } catch (const Error& error) {
      throw Error(this->Describe() + ": " + FileName(file) + ": " + error.what());
    }
    for (std::size_t i = 0; i < datasets_.size(); ++i) {
      std::uint64_t expected = files_[file].rows;
      for (int d : sample_shapes_[i]) expected *= static_cast<std::uint64_t>(d);
      DOPPIO_ENSURE(loaded_[i].size() == expected)
          << this->Describe() << ": " << FileName(file) << ": dataset '" << datasets_[i]
          << "' changed since the layer was set up";
    }
    loaded_file_ = file;
    loaded_epoch_ = ~std::uint64_t(0);
  }
  if (shuffle_ && epoch != loaded_epoch_) {
    row_order_.resize(files_[file].rows);
    std::iota(row_order_.begin(), row_order_.end(), std::uint64_t(0));
    Shuffle(&row_order_, DeriveSeed(DeriveSeed(base_seed_, kRowOrderStream + epoch), file));
  }
  loaded_epoch_ = epoch;
}

template <typename Dtype>
void HDF5DataLayer<Dtype>::Locate(std::uint64_t position, std::uint64_t* row) {
  const std::uint64_t epoch = position / rows_;
  const std::uint64_t offset = position % rows_;
  if (epoch != order_epoch_) {
    file_order_.resize(files_.size());
    std::iota(file_order_.begin(), file_order_.end(), 0);
    if (shuffle_) Shuffle(&file_order_, DeriveSeed(base_seed_, kFileOrderStream + epoch));
    file_starts_.resize(files_.size());
    std::uint64_t start = 0;
    for (std::size_t slot = 0; slot < files_.size(); ++slot) {
      file_starts_[slot] = start;
      start += files_[file_order_[slot]].rows;
    }
    order_epoch_ = epoch;
  }
  // The last file starting at or before `offset`: files without rows are passed over.
  const std::size_t slot =
      std::upper_bound(file_starts_.begin(), file_starts_.end(), offset) - file_starts_.begin() - 1;
  LoadFile(file_order_[slot], epoch);
  const std::uint64_t index = offset - file_starts_[slot];
  *row = shuffle_ ? row_order_[index] : index;
}

template <typename Dtype>
void HDF5DataLayer<Dtype>::Forward_cpu(const BlobVec& bottom, const BlobVec& top) {
  const int batch = sequence_->batch();
  std::vector<Dtype*> out(top.size());
  std::vector<std::size_t> counts(top.size());
  for (std::size_t i = 0; i < top.size(); ++i) {
    out[i] = top[i]->mutable_cpu_data();
    counts[i] = static_cast<std::size_t>(top[i]->count()) / batch;
  }
  for (int j = 0; j < batch; ++j) {
    std::uint64_t row = 0;
    Locate(sequence_->Position(batch_k_, j), &row);
    for (std::size_t i = 0; i < top.size(); ++i) {
      std::copy_n(loaded_[i].data() + counts[i] * row, counts[i], out[i] + counts[i] * j);
    }
  }
  this->batch_position().Set(sequence_->Position(batch_k_, 0));
  ++batch_k_;
}

namespace {
// Each rank reads its own block of every global batch of the files' rows (ShardSequence).
void ShardHdf5DataParam(LayerParameter* param, int rank, int size) {
  param->mutable_data_param()->set_shard_rank(rank);
  param->mutable_data_param()->set_shard_size(size);
}
}  // namespace

DOPPIO_INSTANTIATE_CLASS(HDF5DataLayer);
REGISTER_LAYER_CLASS_WITH_TRAITS(HDF5Data, LayerTraits().ReadsData().Shardable(ShardHdf5DataParam));

}  // namespace doppio
