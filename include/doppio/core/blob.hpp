#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "doppio/core/common.hpp"
#include "doppio/core/synced_memory.hpp"

namespace doppio {

constexpr int kMaxBlobAxes = 32;

// An N-d array with a data and a diff (gradient) buffer of the same shape.
template <typename Dtype>
class Blob {
 public:
  Blob() = default;
  explicit Blob(const std::vector<int>& shape);
  Blob(const Blob&) = delete;
  Blob& operator=(const Blob&) = delete;

  // Changes the shape; memory is reallocated only when the blob grows.
  // Throws Error for negative dimensions or a count that overflows int.
  void Reshape(const std::vector<int>& shape);
  void Reshape(const BlobShape& shape);
  void Reshape(int num, int channels, int height, int width);
  void ReshapeLike(const Blob& other) { Reshape(other.shape()); }

  std::string shape_string() const;
  const std::vector<int>& shape() const { return shape_; }
  // Negative indices count from the end.
  int shape(int index) const { return shape_[CanonicalAxisIndex(index)]; }
  int num_axes() const { return static_cast<int>(shape_.size()); }
  int count() const { return count_; }
  // Product of the dimensions in [start_axis, end_axis).
  int count(int start_axis, int end_axis) const;
  int count(int start_axis) const { return count(start_axis, num_axes()); }
  // Maps an axis in [-num_axes, num_axes) to [0, num_axes); throws Error when out of range.
  int CanonicalAxisIndex(int axis_index) const;

  // Legacy accessors: missing trailing axes read as 1.
  int num() const { return LegacyShape(0); }
  int channels() const { return LegacyShape(1); }
  int height() const { return LegacyShape(2); }
  int width() const { return LegacyShape(3); }
  int LegacyShape(int index) const;

  int offset(int n, int c = 0, int h = 0, int w = 0) const;
  int offset(const std::vector<int>& indices) const;

  Dtype data_at(int n, int c, int h, int w) const { return cpu_data()[offset(n, c, h, w)]; }
  Dtype diff_at(int n, int c, int h, int w) const { return cpu_diff()[offset(n, c, h, w)]; }

  const Dtype* cpu_data() const;
  const Dtype* cpu_diff() const;
  Dtype* mutable_cpu_data();
  Dtype* mutable_cpu_diff();
#ifdef DOPPIO_WITH_CUDA
  // Device copies on `gpu` (see SyncedMemory): the first access binds the buffer to it.
  const Dtype* gpu_data(GpuContext& gpu) const;
  const Dtype* gpu_diff(GpuContext& gpu) const;
  Dtype* mutable_gpu_data(GpuContext& gpu);
  Dtype* mutable_gpu_diff(GpuContext& gpu);
#endif

  const std::shared_ptr<SyncedMemory>& data() const { return data_; }
  const std::shared_ptr<SyncedMemory>& diff() const { return diff_; }
  // Makes this blob read and write another blob's buffer (same count required).
  void ShareData(const Blob& other);
  void ShareDiff(const Blob& other);
  // Rebinds data or diff to a prepared buffer of exactly count() elements (an arena view).
  void SetDataMemory(std::shared_ptr<SyncedMemory> memory);
  void SetDiffMemory(std::shared_ptr<SyncedMemory> memory);
  // Swaps the data buffer with *memory, of exactly count() elements: the net's input exchange
  // (core/input_exchange.hpp) is its one caller.
  void ExchangeData(std::shared_ptr<SyncedMemory>* memory);
  // How many times the data buffer was replaced (Reshape growing it, ShareData, SetDataMemory,
  // ExchangeData): a pointer to data() taken before is stale once this changes.
  std::uint64_t data_generation() const { return data_generation_; }

  // data -= diff. This and the reductions and scalings below run on the device when the
  // newest values are there (the memory's head), else on the host.
  void Update();
  Dtype asum_data() const;
  Dtype asum_diff() const;
  Dtype sumsq_data() const;
  Dtype sumsq_diff() const;
  void scale_data(Dtype factor);
  void scale_diff(Dtype factor);

  // Copies data (or diff); with reshape false the shapes must already agree. A source whose
  // newest values are on the device is copied device to device.
  void CopyFrom(const Blob& source, bool copy_diff = false, bool reshape = false);
  bool ShapeEquals(const BlobProto& other) const;
  // Reads a BlobProto (float or double data, N-d or legacy 4-d shape). With reshape false
  // a shape mismatch throws Error.
  void FromProto(const BlobProto& proto, bool reshape = true);
  void ToProto(BlobProto* proto, bool write_diff = false) const;

 private:
  std::shared_ptr<SyncedMemory> data_;
  std::shared_ptr<SyncedMemory> diff_;
  std::vector<int> shape_;
  int count_ = 0;
  int capacity_ = 0;
  std::uint64_t data_generation_ = 0;
};

// The shape a BlobProto describes, from its shape field or its legacy 4-d fields.
std::vector<int> BlobProtoShape(const BlobProto& proto);
std::string ShapeString(const std::vector<int>& shape);

}  // namespace doppio
