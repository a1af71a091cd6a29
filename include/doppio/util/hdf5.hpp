#pragma once

#include <cstdint>
#include <string>
#include <vector>

// Caffe's other file format, HDF5, through its C API. hdf5.h stays inside util's sources:
// callers see only these classes. Every failure throws Error naming the file and, where
// there is one, the dataset.
namespace doppio {

// Whether `path` is an HDF5 file by Caffe's rule: its name ends in ".h5".
bool IsHdf5Path(const std::string& path);

// An HDF5 file opened read-only. Names are paths inside the file ("history/0").
class Hdf5Reader {
 public:
  explicit Hdf5Reader(const std::string& path);
  ~Hdf5Reader();
  Hdf5Reader(const Hdf5Reader&) = delete;
  Hdf5Reader& operator=(const Hdf5Reader&) = delete;

  const std::string& path() const { return path_; }
  // Whether a dataset or group of that name exists (every group on the way must).
  bool Has(const std::string& name) const;
  bool IsGroup(const std::string& name) const;
  // The names of the members of a group, in HDF5's name order.
  std::vector<std::string> Members(const std::string& group) const;
  // The shape of a numeric (integer or floating-point) dataset; Error for any other kind.
  std::vector<std::uint64_t> Shape(const std::string& name) const;
  // Whether a numeric dataset holds 8-byte (or wider) floating-point values.
  bool IsDouble(const std::string& name) const;
  // Every value of a numeric dataset, converted to Dtype (float or double), in row-major
  // order.
  template <typename Dtype>
  std::vector<Dtype> Read(const std::string& name) const;
  // A one-element integer dataset, and a string dataset (Caffe's hdf5_save_int / _string).
  std::int64_t ReadInt(const std::string& name) const;
  std::string ReadString(const std::string& name) const;

 private:
  // "file 'PATH', dataset 'NAME'", for messages.
  std::string Where(const std::string& name) const;

  std::string path_;
  std::int64_t file_ = -1;
};

// Writes an HDF5 file. The default one is built in memory: Image() is the file's bytes, for
// WriteFileAtomically, so that a snapshot is never left half written. With a path, the file
// is created (truncated) on disk and written as it goes.
class Hdf5Writer {
 public:
  Hdf5Writer();
  explicit Hdf5Writer(const std::string& path);
  ~Hdf5Writer();
  Hdf5Writer(const Hdf5Writer&) = delete;
  Hdf5Writer& operator=(const Hdf5Writer&) = delete;

  // Datasets of Dtype (float or double) of the given shape; the groups on the way are
  // created. A name may not be written twice.
  template <typename Dtype>
  void Write(const std::string& name, const std::vector<int>& shape, const Dtype* values);
  // Appends `shape[0]` rows to a dataset that grows along its first axis (made by the first
  // call); every call must give the same shape after the first axis.
  template <typename Dtype>
  void Append(const std::string& name, const std::vector<int>& shape, const Dtype* values);
  // A one-element integer dataset and a string dataset, as Caffe's hdf5_save_int / _string.
  void WriteInt(const std::string& name, std::int64_t value);
  void WriteString(const std::string& name, const std::string& value);
  // An empty group (and the groups on the way).
  void CreateGroup(const std::string& name);
  // Pushes what was written to the file (on disk: to the operating system).
  void Flush();
  // The whole file as bytes (in-memory writers only).
  std::string Image();

 private:
  std::string Where(const std::string& name) const;

  std::string path_;
  std::int64_t file_ = -1;
};

}  // namespace doppio
