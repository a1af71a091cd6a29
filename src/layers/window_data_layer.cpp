#include "doppio/layers/window_data_layer.hpp"

#include <glog/logging.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>

#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

#include "doppio/core/layer_registry.hpp"
#include "doppio/data/image_io.hpp"
#include "doppio/util/philox.hpp"

namespace doppio {

namespace {

// The sub-stream of the base seed that picks each sample's window.
constexpr std::uint64_t kWindowStream = 0x3d0f;

// The window file as whitespace-separated words, each with its line, read in order.
class WindowFileReader {
 public:
  WindowFileReader(const std::string& path, const std::string& who) : path_(path), who_(who) {
    std::ifstream in(path);
    DOPPIO_ENSURE(in.good()) << who << ": window_data_param.source '" << path << "': cannot open ("
                             << std::strerror(errno) << ")";
    std::string line;
    int number = 0;
    while (std::getline(in, line)) {
      ++number;
      std::istringstream words(line);
      std::string word;
      while (words >> word) words_.push_back({word, number});
    }
    last_line_ = number;
  }

  bool AtEnd() const { return next_ == words_.size(); }
  // The line of the word Next() returns (the last line at the end of the file).
  int line() const { return AtEnd() ? last_line_ : words_[next_].line; }

  // The next word; `what` says what was expected, for the error at the end of the file.
  std::string Next(const std::string& what) {
    DOPPIO_ENSURE(!AtEnd()) << Where() << "the file ends where " << what << " was expected";
    return words_[next_++].text;
  }
  long long NextInt(const std::string& what) {
    const int at = line();
    const std::string word = Next(what);
    char* end = nullptr;
    errno = 0;
    const long long value = std::strtoll(word.c_str(), &end, 10);
    DOPPIO_ENSURE(*end == '\0' && errno == 0 && value >= INT32_MIN && value <= INT32_MAX)
        << Where(at) << what << " must be an integer, got '" << word << "'";
    return value;
  }
  float NextFloat(const std::string& what) {
    const int at = line();
    const std::string word = Next(what);
    char* end = nullptr;
    const float value = std::strtof(word.c_str(), &end);
    DOPPIO_ENSURE(*end == '\0' && std::isfinite(value))
        << Where(at) << what << " must be a number, got '" << word << "'";
    return value;
  }
  // "layer: file:line: " for messages.
  std::string Where(int at = -1) const {
    return who_ + ": " + path_ + ":" + std::to_string(at < 0 ? line() : at) + ": ";
  }

 private:
  struct Word {
    std::string text;
    int line;
  };
  std::string path_, who_;
  std::vector<Word> words_;
  std::size_t next_ = 0;
  int last_line_ = 0;
};

}  // namespace

template <typename Dtype>
WindowDataLayer<Dtype>::~WindowDataLayer() {
  this->StopPrefetching();
}

template <typename Dtype>
std::string WindowDataLayer<Dtype>::ImageName(int index) const {
  return "image '" + images_[index].path + "' (line " + std::to_string(images_[index].line) +
         " of '" + this->layer_param_.window_data_param().source() + "')";
}

template <typename Dtype>
typename BasePrefetchingDataLayer<Dtype>::ReaderFields WindowDataLayer<Dtype>::Reader() const {
  const auto& p = this->layer_param_.window_data_param();
  const auto& shard = this->layer_param_.data_param();
  return {"window_data_param", p.has_batch_size(), p.batch_size(),      "data_param",
          shard.shard_rank(),  shard.shard_size(), shard.has_threads(), shard.threads()};
}

template <typename Dtype>
void WindowDataLayer<Dtype>::ReadWindowFile() {
  const WindowDataParameter& param = this->layer_param_.window_data_param();
  const std::string who = this->Describe();
  WindowFileReader file(param.source(), who);
  std::map<int, int> label_hist;
  while (!file.AtEnd()) {
    const int block_line = file.line();
    const std::string hash = file.Next("'#'");
    DOPPIO_ENSURE(hash == "#") << file.Where(block_line)
                               << "expected '# <image index>' to start an image, got '" << hash
                               << "'";
    file.NextInt("the image index after '#'");
    Image image;
    image.line = file.line();
    image.path = param.root_folder() + file.Next("the image path");
    const int channels_line = file.line();
    const long long channels = file.NextInt("the image's channels");
    const long long height = file.NextInt("the image's height");
    const long long width = file.NextInt("the image's width");
    DOPPIO_ENSURE(channels == 1 || channels == 3)
        << file.Where(channels_line) << "the image has " << channels
        << " channels; WindowData reads 1 (gray) or 3 (BGR)";
    DOPPIO_ENSURE(height > 0 && width > 0)
        << file.Where(channels_line) << "the image's height and width must be positive, got "
        << height << " x " << width;
    DOPPIO_ENSURE(channels_ == 0 || channels == channels_)
        << file.Where(channels_line) << "the image has " << channels
        << " channels but earlier images have " << channels_;
    channels_ = static_cast<int>(channels);
    image.height = static_cast<int>(height);
    image.width = static_cast<int>(width);
    const int count_line = file.line();
    const long long num_windows = file.NextInt("the number of windows");
    DOPPIO_ENSURE(num_windows >= 0)
        << file.Where(count_line) << "the number of windows is negative (" << num_windows << ")";
    const int index = static_cast<int>(images_.size());
    for (long long i = 0; i < num_windows; ++i) {
      const std::string what = "window " + std::to_string(i + 1) + " of " +
                               std::to_string(num_windows) + " of the image of line " +
                               std::to_string(image.line);
      const int line = file.line();
      Window window;
      window.image = index;
      window.label = static_cast<int>(file.NextInt("the class of " + what));
      const float overlap = file.NextFloat("the overlap of " + what);
      window.x1 = static_cast<int>(file.NextInt("x1 of " + what));
      window.y1 = static_cast<int>(file.NextInt("y1 of " + what));
      window.x2 = static_cast<int>(file.NextInt("x2 of " + what));
      window.y2 = static_cast<int>(file.NextInt("y2 of " + what));
      DOPPIO_ENSURE(0 <= window.x1 && window.x1 <= window.x2 && window.x2 < image.width &&
                    0 <= window.y1 && window.y1 <= window.y2 && window.y2 < image.height)
          << file.Where(line) << "the window (x1 y1 x2 y2) = (" << window.x1 << " " << window.y1
          << " " << window.x2 << " " << window.y2 << ") is not inside the " << image.width << " x "
          << image.height << " image of line " << image.line;
      if (overlap >= param.fg_threshold()) {
        DOPPIO_ENSURE(window.label > 0)
            << file.Where(line) << "a foreground window (overlap " << overlap << " >= fg_threshold "
            << param.fg_threshold() << ") must have a class > 0, got " << window.label;
        fg_windows_.push_back(window);
        ++label_hist[window.label];
      } else if (overlap < param.bg_threshold()) {
        window.label = 0;
        bg_windows_.push_back(window);
        ++label_hist[0];
      }
    }
    if (param.cache_images()) {
      std::ifstream in(image.path, std::ios::binary);
      DOPPIO_ENSURE(in.good()) << who << ": cannot read " << ImageName(index) << " ("
                               << std::strerror(errno) << ")";
      image.cached.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    images_.push_back(std::move(image));
  }
  DOPPIO_ENSURE(!images_.empty()) << who << ": the window file '" << param.source()
                                  << "' lists no images";
  LOG(INFO) << who << ": number of images: " << images_.size();
  for (const auto& [label, count] : label_hist) {
    LOG(INFO) << who << ": class " << label << " has " << count << " samples";
  }
}

template <typename Dtype>
void WindowDataLayer<Dtype>::CheckMean() const {
  const std::string who = this->Describe();
  const DataTransformer<Dtype>& transformer = *this->transformer_;
  if (transformer.has_mean_file()) {
    const std::vector<int> mean = transformer.mean_shape();
    DOPPIO_ENSURE(mean[0] == channels_ && mean[1] >= crop_size_ && mean[2] >= crop_size_)
        << who << ": mean file '" << transformer.param().mean_file() << "' has shape "
        << DatumShapeString(mean[0], mean[1], mean[2]) << "; WindowData subtracts its centre "
        << crop_size_ << " x " << crop_size_ << " and needs " << channels_ << " channels";
  }
  const int num_values = transformer.param().mean_value_size();
  DOPPIO_ENSURE(num_values == 0 || num_values == 1 || num_values == channels_)
      << who << ": transform_param has " << num_values << " mean_value entries but the images "
      << "have " << channels_ << " channels; give one for all channels or one per channel";
}

template <typename Dtype>
std::vector<int> WindowDataLayer<Dtype>::DataLayerSetUp() {
  const std::string who = this->Describe();
  const WindowDataParameter& param = this->layer_param_.window_data_param();
  DOPPIO_ENSURE(param.has_source() && !param.source().empty())
      << who << ": window_data_param.source (the window file) is not set";
  DOPPIO_ENSURE(param.fg_fraction() >= 0 && param.fg_fraction() <= 1)
      << who << ": window_data_param.fg_fraction must be between 0 and 1, got "
      << param.fg_fraction();
  DOPPIO_ENSURE(param.crop_mode() == "warp" || param.crop_mode() == "square")
      << who << ": window_data_param.crop_mode must be \"warp\" or \"square\", got \""
      << param.crop_mode() << "\"";
  crop_size_ = static_cast<int>(this->transformer_->param().crop_size());
  DOPPIO_ENSURE(crop_size_ > 0) << who << ": transform_param.crop_size is not set: WindowData "
                                << "warps every window to crop_size x crop_size";
  context_pad_ = static_cast<int>(param.context_pad());
  DOPPIO_ENSURE(2 * static_cast<long long>(context_pad_) < crop_size_)
      << who << ": window_data_param.context_pad " << context_pad_
      << " leaves no room for the window in crop_size " << crop_size_;
  square_ = param.crop_mode() == "square";

  LOG(INFO) << who << ": foreground (object) overlap threshold: " << param.fg_threshold()
            << ", background (non-object) overlap threshold: " << param.bg_threshold()
            << ", foreground sampling fraction: " << param.fg_fraction();
  ReadWindowFile();
  LOG(INFO) << who << ": amount of context padding: " << context_pad_
            << ", crop mode: " << param.crop_mode();
  CheckMean();
  // A missing first image fails here rather than in the prefetch thread.
  LoadImage(0);

  const int global_batch = this->batch_size_ * this->shard_size_;
  num_fg_ = static_cast<int>(static_cast<float>(global_batch) * param.fg_fraction());
  DOPPIO_ENSURE(num_fg_ == 0 || !fg_windows_.empty())
      << who << ": the window file '" << param.source() << "' has no foreground windows (overlap "
      << ">= fg_threshold " << param.fg_threshold() << ") but fg_fraction " << param.fg_fraction()
      << " asks for " << num_fg_ << " a batch";
  DOPPIO_ENSURE(num_fg_ == global_batch || !bg_windows_.empty())
      << who << ": the window file '" << param.source() << "' has no background windows (overlap "
      << "< bg_threshold " << param.bg_threshold() << ") but fg_fraction " << param.fg_fraction()
      << " leaves " << global_batch - num_fg_ << " a batch to them";

  window_seed_ = DeriveSeed(this->base_seed_, kWindowStream);
  this->StreamFrom(0);
  return {channels_, crop_size_, crop_size_};
}

template <typename Dtype>
void WindowDataLayer<Dtype>::RestartStreamAt(std::uint64_t position) {
  // Windows are drawn at random, so the stream has no epochs; its length only numbers it.
  sequence_ =
      std::make_unique<ShardSequence>(this->shard_rank_, this->shard_size_, this->batch_size_,
                                      fg_windows_.size() + bg_windows_.size(), position);
  batch_k_ = 0;
}

template <typename Dtype>
cv::Mat WindowDataLayer<Dtype>::LoadImage(int index) const {
  const Image& entry = images_[index];
  const bool color = channels_ == 3;
  const cv::Mat image = entry.cached.empty()
                            ? ReadImage(entry.path, 0, 0, color)
                            : DecodeImage(entry.cached, ImageReadFlag(color, !color));
  const std::string who = this->Describe();
  DOPPIO_ENSURE(!image.empty()) << who << ": cannot read " << ImageName(index)
                                << ": the file is missing or is not an image OpenCV decodes";
  DOPPIO_ENSURE(image.rows == entry.height && image.cols == entry.width)
      << who << ": " << ImageName(index) << " is " << image.cols << " x " << image.rows
      << " but the window file says " << entry.width << " x " << entry.height;
  return image;
}

template <typename Dtype>
void WindowDataLayer<Dtype>::WarpWindow(const cv::Mat& image, const Window& window, bool mirror,
                                        Dtype* out) const {
  // Caffe's arithmetic, step for step, so that the same window warps to the same pixels.
  const int crop = crop_size_;
  int x1 = window.x1, y1 = window.y1, x2 = window.x2, y2 = window.y2;
  cv::Size size(crop, crop);
  int pad_w = 0, pad_h = 0;
  if (context_pad_ > 0 || square_) {
    // Expand the window so that, warped to crop x crop, context_pad pixels of context
    // surround it.
    const Dtype context_scale =
        static_cast<Dtype>(crop) / static_cast<Dtype>(crop - 2 * context_pad_);
    Dtype half_height = static_cast<Dtype>(y2 - y1 + 1) / 2;
    Dtype half_width = static_cast<Dtype>(x2 - x1 + 1) / 2;
    const Dtype center_x = static_cast<Dtype>(x1) + half_width;
    const Dtype center_y = static_cast<Dtype>(y1) + half_height;
    if (square_) half_width = half_height = std::max(half_width, half_height);
    x1 = static_cast<int>(std::round(center_x - half_width * context_scale));
    x2 = static_cast<int>(std::round(center_x + half_width * context_scale));
    y1 = static_cast<int>(std::round(center_y - half_height * context_scale));
    y2 = static_cast<int>(std::round(center_y + half_height * context_scale));
    // Clip the expanded region to the image, remembering how far it reached outside.
    const int unclipped_height = y2 - y1 + 1, unclipped_width = x2 - x1 + 1;
    int pad_x1 = std::max(0, -x1), pad_y1 = std::max(0, -y1);
    int pad_x2 = std::max(0, x2 - image.cols + 1), pad_y2 = std::max(0, y2 - image.rows + 1);
    x1 += pad_x1;
    x2 -= pad_x2;
    y1 += pad_y1;
    y2 -= pad_y2;
    const Dtype scale_x = static_cast<Dtype>(crop) / static_cast<Dtype>(unclipped_width);
    const Dtype scale_y = static_cast<Dtype>(crop) / static_cast<Dtype>(unclipped_height);
    size.width = static_cast<int>(std::round(static_cast<Dtype>(x2 - x1 + 1) * scale_x));
    size.height = static_cast<int>(std::round(static_cast<Dtype>(y2 - y1 + 1) * scale_y));
    pad_x1 = static_cast<int>(std::round(static_cast<Dtype>(pad_x1) * scale_x));
    pad_x2 = static_cast<int>(std::round(static_cast<Dtype>(pad_x2) * scale_x));
    pad_y1 = static_cast<int>(std::round(static_cast<Dtype>(pad_y1) * scale_y));
    pad_y2 = static_cast<int>(std::round(static_cast<Dtype>(pad_y2) * scale_y));
    pad_h = pad_y1;
    // Mirroring mirrors the padding too.
    pad_w = mirror ? pad_x2 : pad_x1;
    // Rounding may push the warped region past the square (Caffe trims it); a region
    // rounded to nothing keeps one pixel, where Caffe's resize would fail.
    pad_h = std::min(pad_h, crop - 1);
    pad_w = std::min(pad_w, crop - 1);
    size.height = std::max(1, std::min(size.height, crop - pad_h));
    size.width = std::max(1, std::min(size.width, crop - pad_w));
  }
  cv::Mat warped;
  cv::resize(image(cv::Rect(x1, y1, x2 - x1 + 1, y2 - y1 + 1)), warped, size, 0, 0,
             cv::INTER_LINEAR);
  if (mirror) cv::flip(warped, warped, 1);

  const DataTransformer<Dtype>& transformer = *this->transformer_;
  const Dtype scale = static_cast<Dtype>(transformer.param().scale());
  const std::vector<float>& mean = transformer.mean_image();
  const std::vector<int> mean_shape = transformer.mean_shape();
  const int mean_off_h = (mean_shape[1] - crop) / 2, mean_off_w = (mean_shape[2] - crop) / 2;
  const int num_values = transformer.param().mean_value_size();
  const int channels = channels_;
  for (int h = 0; h < warped.rows; ++h) {
    const unsigned char* row = warped.ptr<unsigned char>(h);
    for (int w = 0; w < warped.cols; ++w) {
      for (int c = 0; c < channels; ++c) {
        const Dtype pixel = static_cast<Dtype>(row[w * channels + c]);
        Dtype subtracted = pixel;
        if (!mean.empty()) {
          subtracted -=
              mean[(static_cast<std::size_t>(c) * mean_shape[1] + h + mean_off_h + pad_h) *
                       mean_shape[2] +
                   w + mean_off_w + pad_w];
        } else if (num_values > 0) {
          subtracted -= static_cast<Dtype>(transformer.param().mean_value(num_values == 1 ? 0 : c));
        }
        out[(static_cast<std::size_t>(c) * crop + h + pad_h) * crop + w + pad_w] =
            subtracted * scale;
      }
    }
  }
}

template <typename Dtype>
void WindowDataLayer<Dtype>::LoadBatch(Batch<Dtype>* batch) {
  const int batch_size = this->batch_size_;
  const std::size_t record_count = static_cast<std::size_t>(channels_) * crop_size_ * crop_size_;
  batch->data.Reshape({batch_size, channels_, crop_size_, crop_size_});
  batch->label.Reshape({batch_size});
  Dtype* const data = batch->data.mutable_cpu_data();
  Dtype* const labels = batch->label.mutable_cpu_data();
  // What a window's context does not cover (outside the image) stays 0.
  std::fill_n(data, record_count * batch_size, Dtype(0));
  samples_.resize(batch_size);
  for (int i = 0; i < batch_size; ++i) {
    const std::uint64_t position = sequence_->Position(batch_k_, i);
    // Sample g of the global batch of G is foreground when the count floor(g' x F / G) of
    // the first g' samples steps up at g' = g + 1: F samples, evenly spread.
    const std::int64_t global = static_cast<std::int64_t>(this->shard_rank_) * batch_size + i;
    const std::int64_t num = this->shard_size_ * static_cast<std::int64_t>(batch_size);
    const bool foreground = (global + 1) * num_fg_ / num > global * num_fg_ / num;
    const std::vector<Window>& windows = foreground ? fg_windows_ : bg_windows_;
    const std::uint32_t word = SampleWords(window_seed_, position, 0).v[0];
    samples_[i] = {&windows[word % windows.size()], this->transformer_->DrawFor(position).mirror};
  }
  batch->first_position = sequence_->Position(batch_k_, 0);
  ++batch_k_;
  this->workers_->For(batch_size, [&](int i) {
    const Window& window = *samples_[i].window;
    WarpWindow(LoadImage(window.image), window, samples_[i].mirror, data + record_count * i);
    labels[i] = static_cast<Dtype>(window.label);
  });
}

namespace {
// Each rank reads its own block of every global batch (ShardSequence); Caffe's
// window_data_param has no field for it, so the shard is data_param's, as HDF5Data's.
void ShardWindowDataParam(LayerParameter* param, int rank, int size) {
  param->mutable_data_param()->set_shard_rank(rank);
  param->mutable_data_param()->set_shard_size(size);
}
}  // namespace

DOPPIO_INSTANTIATE_CLASS(WindowDataLayer);
REGISTER_LAYER_CLASS_WITH_TRAITS(WindowData,
                                 LayerTraits().ReadsData().Shardable(ShardWindowDataParam));

}  // namespace doppio
