#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "doppio/core/common.hpp"

namespace doppio {

// The converters behind tools/convert_mnist_data, convert_cifar_data, convert_imageset and
// compute_image_mean. Each writes Datum records in Caffe's layout and keys, logs progress
// every few seconds on long runs, and throws Error naming the file (and line or record) on
// bad input. The output LMDB must not exist yet.

struct ConvertSummary {
  std::size_t records = 0;
  double seconds = 0;
};

// MNIST idx files (images: magic 2051, labels: magic 2049, big-endian) -> LMDB of
// 1 x rows x cols uint8 Datums, keys "%08d".
ConvertSummary ConvertMnist(const std::string& images_path, const std::string& labels_path,
                            const std::string& db_path, const std::string& backend = "lmdb");

// CIFAR-10 binary batches (records of 1 label byte + 3072 pixel bytes, R, G and B planes of
// 32 x 32): data_batch_1..5.bin -> <output>/cifar10_train_lmdb (keys "%05d" over all five),
// test_batch.bin -> <output>/cifar10_test_lmdb. Returns {train, test}.
std::vector<ConvertSummary> ConvertCifar10(const std::string& input_folder,
                                           const std::string& output_folder,
                                           const std::string& backend = "lmdb");

struct ImageSetOptions {
  bool gray = false;
  bool shuffle = false;
  std::uint64_t seed = 1701;
  int resize_height = 0;
  int resize_width = 0;
  bool check_size = false;
  bool encoded = false;
  std::string encode_type;  // with encoded: "" keeps each file's own format
  std::string backend = "lmdb";
};
// A list of "path label" lines (paths relative to root_folder) -> LMDB, keys
// "%08d_<path>" in list order (or shuffled). A missing or unreadable image is an Error naming
// the file and its line.
ConvertSummary ConvertImageSet(const std::string& root_folder, const std::string& list_path,
                               const std::string& db_path, const ImageSetOptions& options);

// The per-pixel mean of every record of an LMDB as a 1 x C x H x W BlobProto (written
// atomically to output_path unless it is empty). channel_means receives the mean of each
// channel. Records of differing shapes are an Error naming the record.
ConvertSummary ComputeImageMean(const std::string& db_path, const std::string& output_path,
                                std::vector<double>* channel_means = nullptr,
                                const std::string& backend = "lmdb");

// Formats a record key as Caffe's tools do: "%0<width>d".
std::string FormatKey(std::uint64_t index, int width);

}  // namespace doppio
