#include "doppio/data/convert.hpp"

#include <glog/logging.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <numeric>

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>

#include "doppio/data/db.hpp"
#include "doppio/data/image_codecs.hpp"
#include "doppio/data/image_io.hpp"
#include "doppio/util/io.hpp"
#include "doppio/util/rng.hpp"

namespace doppio {

namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Logs "<what>: N of M records (P%)" at most every few seconds.
class Progress {
 public:
  Progress(std::string what, std::size_t total) : what_(std::move(what)), total_(total) {}
  void Update(std::size_t done) {
    const auto now = Clock::now();
    if (std::chrono::duration<double>(now - last_).count() < 2.0) return;
    last_ = now;
    if (total_ > 0) {
      LOG(INFO) << what_ << ": " << done << " of " << total_ << " records ("
                << (100 * done / total_) << "%)";
    } else {
      LOG(INFO) << what_ << ": " << done << " records";
    }
  }

 private:
  std::string what_;
  std::size_t total_;
  Clock::time_point last_ = Clock::now();
};

// Puts records and commits every kCommitEvery.
class Writer {
 public:
  Writer(const std::string& backend, const std::string& path)
      : db_(db::OpenDB(backend, path, db::Mode::kNew, "")), txn_(db_->NewTransaction()) {}
  void Put(const std::string& key, const Datum& datum) {
    datum.SerializeToString(&buffer_);
    txn_->Put(key, buffer_);
    if (++pending_ == kCommitEvery) Commit();
  }
  void Commit() {
    if (pending_ == 0) return;
    txn_->Commit();
    pending_ = 0;
  }

 private:
  static constexpr int kCommitEvery = 1000;
  std::unique_ptr<db::DB> db_;
  std::unique_ptr<db::Transaction> txn_;
  std::string buffer_;
  int pending_ = 0;
};

std::string ReadFile(const std::string& path, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  DOPPIO_ENSURE(in.good()) << path << ": cannot open " << what << " (" << std::strerror(errno)
                           << ")";
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

std::uint32_t BigEndian32(const std::string& bytes, std::size_t offset) {
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data() + offset);
  return (std::uint32_t(p[0]) << 24) | (std::uint32_t(p[1]) << 16) | (std::uint32_t(p[2]) << 8) |
         std::uint32_t(p[3]);
}

struct ListEntry {
  std::string path;
  int label;
  int line;
};

std::vector<ListEntry> ReadImageList(const std::string& list_path) {
  std::ifstream list(list_path);
  DOPPIO_ENSURE(list.good()) << list_path << ": cannot open the image list ("
                             << std::strerror(errno) << ")";
  std::vector<ListEntry> entries;
  std::string line;
  int number = 0;
  while (std::getline(list, line)) {
    ++number;
    while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.pop_back();
    std::size_t start = 0;
    while (start < line.size() && std::isspace(static_cast<unsigned char>(line[start]))) ++start;
    if (start == line.size()) continue;
    const std::size_t split = line.find_last_of(" \t");
    DOPPIO_ENSURE(split != std::string::npos && split > start)
        << list_path << ":" << number << ": expected 'path label', got '" << line << "'";
    const std::string label_text = line.substr(split + 1);
    char* end = nullptr;
    errno = 0;
    const long label = std::strtol(label_text.c_str(), &end, 10);
    DOPPIO_ENSURE(*end == '\0' && errno == 0 && label >= INT32_MIN && label <= INT32_MAX)
        << list_path << ":" << number << ": the label '" << label_text
        << "' is not an integer (expected 'path label')";
    std::size_t path_end = split;
    while (path_end > start && std::isspace(static_cast<unsigned char>(line[path_end - 1]))) {
      --path_end;
    }
    entries.push_back({line.substr(start, path_end - start), static_cast<int>(label), number});
  }
  DOPPIO_ENSURE(!entries.empty()) << list_path << ": the list names no images";
  return entries;
}

}  // namespace

std::string FormatKey(std::uint64_t index, int width) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%0*llu", width, static_cast<unsigned long long>(index));
  return buffer;
}

ConvertSummary ConvertMnist(const std::string& images_path, const std::string& labels_path,
                            const std::string& db_path, const std::string& backend) {
  const auto start = Clock::now();
  const std::string images = ReadFile(images_path, "the MNIST image file");
  const std::string labels = ReadFile(labels_path, "the MNIST label file");
  DOPPIO_ENSURE(images.size() >= 16 && BigEndian32(images, 0) == 2051)
      << images_path << ": not an MNIST image file (idx3-ubyte: magic number 2051 expected"
      << (images.size() >= 4 ? ", found " + std::to_string(BigEndian32(images, 0)) : "")
      << "); gunzip .gz files first";
  DOPPIO_ENSURE(labels.size() >= 8 && BigEndian32(labels, 0) == 2049)
      << labels_path << ": not an MNIST label file (idx1-ubyte: magic number 2049 expected"
      << (labels.size() >= 4 ? ", found " + std::to_string(BigEndian32(labels, 0)) : "")
      << "); gunzip .gz files first";
  const std::uint32_t count = BigEndian32(images, 4);
  const std::uint32_t rows = BigEndian32(images, 8);
  const std::uint32_t cols = BigEndian32(images, 12);
  const std::uint32_t label_count = BigEndian32(labels, 4);
  DOPPIO_ENSURE(count == label_count) << images_path << " holds " << count << " images but "
                                      << labels_path << " holds " << label_count << " labels";
  DOPPIO_ENSURE(rows > 0 && cols > 0 && rows <= 65536 && cols <= 65536)
      << images_path << ": implausible image size " << rows << " x " << cols;
  const std::size_t pixels = static_cast<std::size_t>(rows) * cols;
  DOPPIO_ENSURE(images.size() == 16 + pixels * count)
      << images_path << ": " << images.size() << " bytes, but " << count << " images of " << rows
      << " x " << cols << " need " << 16 + pixels * count << " (truncated?)";
  DOPPIO_ENSURE(labels.size() == 8 + static_cast<std::size_t>(count))
      << labels_path << ": " << labels.size() << " bytes, but " << count << " labels need "
      << 8 + static_cast<std::size_t>(count) << " (truncated?)";

  Writer writer(backend, db_path);
  Progress progress("convert_mnist_data", count);
  Datum datum;
  datum.set_channels(1);
  datum.set_height(static_cast<int>(rows));
  datum.set_width(static_cast<int>(cols));
  for (std::uint32_t i = 0; i < count; ++i) {
    datum.set_data(images.data() + 16 + pixels * i, pixels);
    datum.set_label(static_cast<unsigned char>(labels[8 + i]));
    writer.Put(FormatKey(i, 8), datum);
    progress.Update(i + 1);
  }
  writer.Commit();
  return {count, SecondsSince(start)};
}

std::vector<ConvertSummary> ConvertCifar10(const std::string& input_folder,
                                           const std::string& output_folder,
                                           const std::string& backend) {
  namespace fs = std::filesystem;
  constexpr std::size_t kImageBytes = 3 * 32 * 32;
  constexpr std::size_t kRecordBytes = kImageBytes + 1;
  const std::vector<std::string> train_files = {"data_batch_1.bin", "data_batch_2.bin",
                                                "data_batch_3.bin", "data_batch_4.bin",
                                                "data_batch_5.bin"};
  for (const auto& name : train_files) {
    const fs::path path = fs::path(input_folder) / name;
    DOPPIO_ENSURE(fs::exists(path))
        << path.string() << ": missing (CIFAR-10 binary version expected: "
        << "data_batch_1.bin .. data_batch_5.bin, test_batch.bin)";
  }
  std::error_code ignored;
  fs::create_directories(output_folder, ignored);

  auto convert = [&](const std::vector<std::string>& files, const std::string& db_name) {
    const auto start = Clock::now();
    Writer writer(backend, (fs::path(output_folder) / db_name).string());
    Datum datum;
    datum.set_channels(3);
    datum.set_height(32);
    datum.set_width(32);
    std::size_t written = 0;
    Progress progress("convert_cifar_data " + db_name, 0);
    for (const auto& name : files) {
      const std::string path = (fs::path(input_folder) / name).string();
      const std::string bytes = ReadFile(path, "a CIFAR-10 batch");
      DOPPIO_ENSURE(!bytes.empty() && bytes.size() % kRecordBytes == 0)
          << path << ": " << bytes.size() << " bytes is not a whole number of CIFAR-10 records ("
          << kRecordBytes << " bytes each: 1 label byte and 3072 pixel bytes)";
      const std::size_t records = bytes.size() / kRecordBytes;
      for (std::size_t i = 0; i < records; ++i) {
        const char* record = bytes.data() + i * kRecordBytes;
        const int label = static_cast<unsigned char>(record[0]);
        DOPPIO_ENSURE(label < 10) << path << ": record " << i << " has label " << label
                                  << "; CIFAR-10 labels are 0..9 (is this the CIFAR-100 format?)";
        datum.set_label(label);
        datum.set_data(record + 1, kImageBytes);
        writer.Put(FormatKey(written, 5), datum);
        ++written;
        progress.Update(written);
      }
    }
    writer.Commit();
    return ConvertSummary{written, SecondsSince(start)};
  };
  DOPPIO_ENSURE(fs::exists(fs::path(input_folder) / "test_batch.bin"))
      << (fs::path(input_folder) / "test_batch.bin").string() << ": missing";
  std::vector<ConvertSummary> result;
  result.push_back(convert(train_files, "cifar10_train_lmdb"));
  result.push_back(convert({"test_batch.bin"}, "cifar10_test_lmdb"));
  return result;
}

ConvertSummary ConvertImageSet(const std::string& root_folder, const std::string& list_path,
                               const std::string& db_path, const ImageSetOptions& options) {
  const auto start = Clock::now();
  DOPPIO_ENSURE((options.resize_height > 0) == (options.resize_width > 0))
      << "convert_imageset: --resize_height and --resize_width must be given together";
  DOPPIO_ENSURE(options.resize_height >= 0 && options.resize_width >= 0)
      << "convert_imageset: negative resize";
  if (options.encoded && !options.encode_type.empty()) {
    DOPPIO_ENSURE(OpenImageCodecs().has_writer("." + options.encode_type))
        << "convert_imageset: --encode_type '" << options.encode_type
        << "' is not a format OpenCV can write (jpg, png, ...)";
  }
  std::vector<ListEntry> entries = ReadImageList(list_path);
  if (options.shuffle) {
    Rng rng(options.seed);
    for (std::size_t i = entries.size() - 1; i > 0; --i) {
      std::swap(entries[i], entries[rng.Below(i + 1)]);
    }
  }
  LOG(INFO) << "convert_imageset: " << entries.size() << " images in " << list_path;
  Writer writer(options.backend, db_path);
  Progress progress("convert_imageset", entries.size());
  Datum datum;
  std::vector<int> first_shape, shape;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const ListEntry& entry = entries[i];
    const std::string path = root_folder + entry.path;
    std::string encoding;
    if (options.encoded) {
      encoding = options.encode_type;
      if (encoding.empty()) {
        const auto dot = entry.path.rfind('.');
        encoding = dot == std::string::npos ? "png" : entry.path.substr(dot + 1);
      }
    }
    DOPPIO_ENSURE(ReadImageToDatum(path, entry.label, options.resize_height, options.resize_width,
                                   !options.gray, encoding, &datum, &shape))
        << "convert_imageset: cannot read image '" << path << "' (line " << entry.line << " of '"
        << list_path << "'): the file is missing or is not an image OpenCV decodes";
    if (options.check_size) {
      if (first_shape.empty()) first_shape = shape;
      DOPPIO_ENSURE(shape == first_shape)
          << "convert_imageset --check_size: image '" << path << "' (line " << entry.line << ") is "
          << shape[0] << "x" << shape[1] << "x" << shape[2] << " but the first image is "
          << first_shape[0] << "x" << first_shape[1] << "x" << first_shape[2];
    }
    writer.Put(FormatKey(i, 8) + "_" + entry.path, datum);
    progress.Update(i + 1);
  }
  writer.Commit();
  return {entries.size(), SecondsSince(start)};
}

ConvertSummary ComputeImageMean(const std::string& db_path, const std::string& output_path,
                                std::vector<double>* channel_means, const std::string& backend) {
  const auto start = Clock::now();
  std::unique_ptr<db::DB> db = db::OpenDB(backend, db_path, db::Mode::kRead, "compute_image_mean");
  const std::size_t total = db->size();
  DOPPIO_ENSURE(total > 0) << "compute_image_mean: LMDB '" << db_path << "' holds no records";
  std::unique_ptr<db::Cursor> cursor = db->NewCursor();
  Progress progress("compute_image_mean", total);
  std::vector<double> sum;
  int channels = 0, height = 0, width = 0;
  std::size_t count = 0;
  Datum datum;
  for (; cursor->valid(); cursor->Next()) {
    const std::string key(cursor->key());
    const std::string where = "record '" + key + "' of LMDB '" + db_path + "'";
    DOPPIO_ENSURE(
        datum.ParseFromArray(cursor->value().data(), static_cast<int>(cursor->value().size())))
        << "compute_image_mean: " << where << " is not a Datum";
    int c, h, w;
    cv::Mat image;
    const bool raw_float = !datum.encoded() && datum.data().empty() && datum.float_data_size() > 0;
    if (datum.encoded()) {
      image = DecodeImage(datum.data(), ImageReadFlag(false, false));
      DOPPIO_ENSURE(!image.empty())
          << "compute_image_mean: " << where << " is marked encoded but does not decode";
      c = image.channels(), h = image.rows, w = image.cols;
    } else {
      c = datum.channels(), h = datum.height(), w = datum.width();
      const long long needed = static_cast<long long>(c) * h * w;
      const long long stored =
          raw_float ? datum.float_data_size() : static_cast<long long>(datum.data().size());
      DOPPIO_ENSURE(c > 0 && h > 0 && w > 0 && stored == needed)
          << "compute_image_mean: " << where << " holds " << stored << " values for shape " << c
          << "x" << h << "x" << w;
    }
    if (count == 0) {
      channels = c, height = h, width = w;
      sum.assign(static_cast<std::size_t>(c) * h * w, 0.0);
    }
    DOPPIO_ENSURE(c == channels && h == height && w == width)
        << "compute_image_mean: " << where << " is " << c << "x" << h << "x" << w
        << " but the first record is " << channels << "x" << height << "x" << width
        << "; the mean needs records of one size";
    if (datum.encoded()) {
      for (int y = 0; y < h; ++y) {
        const unsigned char* row = image.ptr<unsigned char>(y);
        for (int x = 0; x < w; ++x) {
          for (int k = 0; k < c; ++k) {
            sum[(static_cast<std::size_t>(k) * h + y) * w + x] += row[x * c + k];
          }
        }
      }
    } else if (raw_float) {
      for (std::size_t i = 0; i < sum.size(); ++i) sum[i] += datum.float_data(i);
    } else {
      const auto* data = reinterpret_cast<const unsigned char*>(datum.data().data());
      for (std::size_t i = 0; i < sum.size(); ++i) sum[i] += data[i];
    }
    ++count;
    progress.Update(count);
  }
  BlobProto mean;
  mean.set_num(1);
  mean.set_channels(channels);
  mean.set_height(height);
  mean.set_width(width);
  for (double value : sum) mean.add_data(static_cast<float>(value / count));
  if (channel_means != nullptr) {
    channel_means->assign(channels, 0.0);
    const std::size_t plane = static_cast<std::size_t>(height) * width;
    for (int k = 0; k < channels; ++k) {
      double total_k = 0;
      for (std::size_t i = 0; i < plane; ++i) total_k += sum[k * plane + i];
      (*channel_means)[k] = total_k / (static_cast<double>(count) * plane);
    }
  }
  if (!output_path.empty()) WriteProtoToBinaryFile(mean, output_path);
  return {count, SecondsSince(start)};
}

}  // namespace doppio
