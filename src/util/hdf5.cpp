#include "doppio/util/hdf5.hpp"

#include <hdf5.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>
#include <sstream>
#include <type_traits>

#include "doppio/util/error.hpp"

namespace doppio {

namespace {

// HDF5 prints its error stack to stderr by default; Doppio reports errors itself. The setting
// belongs to the calling thread's error stack, so every entry point makes it.
void SilenceLibraryErrors() { H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr); }

// The innermost message of the calling thread's HDF5 error stack, for our own messages.
std::string LibraryError() {
  std::string message;
  H5Ewalk2(
      H5E_DEFAULT, H5E_WALK_UPWARD,
      [](unsigned n, const H5E_error2_t* error, void* out) -> herr_t {
        if (n == 0 && error->desc != nullptr) *static_cast<std::string*>(out) = error->desc;
        return 0;
      },
      &message);
  H5Eclear2(H5E_DEFAULT);
  return message.empty() ? "HDF5 error" : message;
}

// Closes an HDF5 identifier with the function of its kind when it goes out of scope.
class Handle {
 public:
  Handle(hid_t id, herr_t (*close)(hid_t)) : id_(id), close_(close) {}
  ~Handle() {
    if (id_ >= 0) close_(id_);
  }
  Handle(Handle&& other) noexcept : id_(other.id_), close_(other.close_) { other.id_ = -1; }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  hid_t get() const { return id_; }
  bool ok() const { return id_ >= 0; }

 private:
  hid_t id_;
  herr_t (*close_)(hid_t);
};

template <typename Dtype>
hid_t NativeType() {
  static_assert(std::is_same_v<Dtype, float> || std::is_same_v<Dtype, double>);
  return std::is_same_v<Dtype, float> ? H5T_NATIVE_FLOAT : H5T_NATIVE_DOUBLE;
}

// A link-creation property list that makes the groups on a path as it goes.
Handle IntermediateGroups() {
  Handle list(H5Pcreate(H5P_LINK_CREATE), H5Pclose);
  H5Pset_create_intermediate_group(list.get(), 1);
  return list;
}

std::vector<hsize_t> Dims(const std::vector<int>& shape) {
  return std::vector<hsize_t>(shape.begin(), shape.end());
}

}  // namespace

bool IsHdf5Path(const std::string& path) {
  return path.size() >= 3 && path.compare(path.size() - 3, 3, ".h5") == 0;
}

// ---- Hdf5Reader ----

Hdf5Reader::Hdf5Reader(const std::string& path) : path_(path) {
  SilenceLibraryErrors();
  std::error_code error;
  DOPPIO_ENSURE(std::filesystem::is_regular_file(path, error))
      << path << ": cannot open (" << std::strerror(ENOENT) << ")";
  DOPPIO_ENSURE(H5Fis_hdf5(path.c_str()) > 0) << path << ": not an HDF5 file";
  file_ = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  DOPPIO_ENSURE(file_ >= 0) << path << ": cannot open as HDF5 (" << LibraryError() << ")";
}

Hdf5Reader::~Hdf5Reader() {
  if (file_ >= 0) H5Fclose(file_);
}

std::string Hdf5Reader::Where(const std::string& name) const {
  return path_ + ", dataset '" + name + "'";
}

bool Hdf5Reader::Has(const std::string& name) const {
  // H5Lexists wants every group on the way to exist: check the path a step at a time.
  std::size_t end = 0;
  while (end != std::string::npos) {
    end = name.find('/', end + 1);
    const std::string prefix = name.substr(0, end);
    if (H5Lexists(file_, prefix.c_str(), H5P_DEFAULT) <= 0) {
      H5Eclear2(H5E_DEFAULT);
      return false;
    }
  }
  return true;
}

bool Hdf5Reader::IsGroup(const std::string& name) const {
  if (!Has(name)) return false;
  H5O_info_t info;
  DOPPIO_ENSURE(H5Oget_info_by_name(file_, name.c_str(), &info, H5P_DEFAULT) >= 0)
      << path_ << ": cannot inspect '" << name << "' (" << LibraryError() << ")";
  return info.type == H5O_TYPE_GROUP;
}

std::vector<std::string> Hdf5Reader::Members(const std::string& group) const {
  Handle id(H5Gopen2(file_, group.c_str(), H5P_DEFAULT), H5Gclose);
  DOPPIO_ENSURE(id.ok()) << path_ << ": has no group '" << group << "'";
  std::vector<std::string> names;
  hsize_t index = 0;
  const herr_t status = H5Literate(
      id.get(), H5_INDEX_NAME, H5_ITER_INC, &index,
      [](hid_t, const char* name, const H5L_info_t*, void* out) -> herr_t {
        static_cast<std::vector<std::string>*>(out)->push_back(name);
        return 0;
      },
      &names);
  DOPPIO_ENSURE(status >= 0) << path_ << ": cannot list group '" << group << "' (" << LibraryError()
                             << ")";
  return names;
}

std::vector<std::uint64_t> Hdf5Reader::Shape(const std::string& name) const {
  DOPPIO_ENSURE(Has(name)) << path_ << ": has no dataset '" << name << "'";
  Handle dataset(H5Dopen2(file_, name.c_str(), H5P_DEFAULT), H5Dclose);
  DOPPIO_ENSURE(dataset.ok()) << Where(name) << ": not a dataset (" << LibraryError() << ")";
  Handle type(H5Dget_type(dataset.get()), H5Tclose);
  const H5T_class_t kind = H5Tget_class(type.get());
  DOPPIO_ENSURE(kind == H5T_FLOAT || kind == H5T_INTEGER)
      << Where(name) << ": holds neither floating-point nor integer numbers";
  Handle space(H5Dget_space(dataset.get()), H5Sclose);
  const int rank = H5Sget_simple_extent_ndims(space.get());
  DOPPIO_ENSURE(rank >= 0) << Where(name) << ": not a simple array (" << LibraryError() << ")";
  std::vector<hsize_t> dims(rank);
  H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr);
  return std::vector<std::uint64_t>(dims.begin(), dims.end());
}

bool Hdf5Reader::IsDouble(const std::string& name) const {
  Shape(name);
  Handle dataset(H5Dopen2(file_, name.c_str(), H5P_DEFAULT), H5Dclose);
  Handle type(H5Dget_type(dataset.get()), H5Tclose);
  return H5Tget_class(type.get()) == H5T_FLOAT && H5Tget_size(type.get()) >= sizeof(double);
}

template <typename Dtype>
std::vector<Dtype> Hdf5Reader::Read(const std::string& name) const {
  std::uint64_t count = 1;
  for (std::uint64_t d : Shape(name)) count *= d;
  Handle dataset(H5Dopen2(file_, name.c_str(), H5P_DEFAULT), H5Dclose);
  std::vector<Dtype> values(count);
  if (count == 0) return values;
  // HDF5 converts the stored type (any integer or floating-point width) to Dtype.
  DOPPIO_ENSURE(H5Dread(dataset.get(), NativeType<Dtype>(), H5S_ALL, H5S_ALL, H5P_DEFAULT,
                        values.data()) >= 0)
      << Where(name) << ": cannot read (" << LibraryError() << ")";
  return values;
}

std::int64_t Hdf5Reader::ReadInt(const std::string& name) const {
  std::uint64_t count = 1;
  for (std::uint64_t d : Shape(name)) count *= d;
  DOPPIO_ENSURE(count == 1) << Where(name) << ": expected one number, found " << count;
  Handle dataset(H5Dopen2(file_, name.c_str(), H5P_DEFAULT), H5Dclose);
  Handle type(H5Dget_type(dataset.get()), H5Tclose);
  DOPPIO_ENSURE(H5Tget_class(type.get()) == H5T_INTEGER)
      << Where(name) << ": expected an integer, found a floating-point number";
  std::int64_t value = 0;
  DOPPIO_ENSURE(H5Dread(dataset.get(), H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, &value) >=
                0)
      << Where(name) << ": cannot read (" << LibraryError() << ")";
  return value;
}

std::string Hdf5Reader::ReadString(const std::string& name) const {
  DOPPIO_ENSURE(Has(name)) << path_ << ": has no dataset '" << name << "'";
  Handle dataset(H5Dopen2(file_, name.c_str(), H5P_DEFAULT), H5Dclose);
  DOPPIO_ENSURE(dataset.ok()) << Where(name) << ": not a dataset";
  Handle type(H5Dget_type(dataset.get()), H5Tclose);
  DOPPIO_ENSURE(H5Tget_class(type.get()) == H5T_STRING) << Where(name) << ": not a string";
  Handle space(H5Dget_space(dataset.get()), H5Sclose);
  const hssize_t count = H5Sget_simple_extent_npoints(space.get());
  DOPPIO_ENSURE(count >= 0) << Where(name) << ": " << LibraryError();
  std::vector<std::string> values;
  if (H5Tis_variable_str(type.get()) > 0) {
    std::vector<char*> pointers(count, nullptr);
    Handle memory(H5Tcopy(H5T_C_S1), H5Tclose);
    H5Tset_size(memory.get(), H5T_VARIABLE);
    DOPPIO_ENSURE(
        H5Dread(dataset.get(), memory.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, pointers.data()) >= 0)
        << Where(name) << ": cannot read (" << LibraryError() << ")";
    for (char* p : pointers) values.emplace_back(p == nullptr ? "" : p);
    H5Dvlen_reclaim(memory.get(), space.get(), H5P_DEFAULT, pointers.data());
  } else {
    // Fixed-length strings (Caffe's H5LTmake_dataset_string), each padded or terminated.
    const std::size_t size = H5Tget_size(type.get());
    std::vector<char> buffer(size * count + 1, '\0');
    Handle memory(H5Tcopy(H5T_C_S1), H5Tclose);
    H5Tset_size(memory.get(), size);
    DOPPIO_ENSURE(
        H5Dread(dataset.get(), memory.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, buffer.data()) >= 0)
        << Where(name) << ": cannot read (" << LibraryError() << ")";
    for (hssize_t i = 0; i < count; ++i) {
      const char* start = buffer.data() + i * size;
      values.emplace_back(start, strnlen(start, size));
    }
  }
  DOPPIO_ENSURE(values.size() == 1)
      << Where(name) << ": expected one string, found " << values.size();
  return values[0];
}

template std::vector<float> Hdf5Reader::Read<float>(const std::string&) const;
template std::vector<double> Hdf5Reader::Read<double>(const std::string&) const;

// ---- Hdf5Writer ----

Hdf5Writer::Hdf5Writer() {
  SilenceLibraryErrors();
  Handle access(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
  // Grows in 1 MiB steps, never touches the disk.
  H5Pset_fapl_core(access.get(), 1 << 20, 0);
  // The name only tells this file from other open ones.
  std::ostringstream name;
  name << "doppio-in-memory-" << static_cast<const void*>(this) << ".h5";
  path_ = name.str();
  file_ = H5Fcreate(path_.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, access.get());
  DOPPIO_ENSURE(file_ >= 0) << "cannot create an HDF5 file in memory (" << LibraryError() << ")";
}

Hdf5Writer::Hdf5Writer(const std::string& path) : path_(path) {
  SilenceLibraryErrors();
  file_ = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  DOPPIO_ENSURE(file_ >= 0) << path << ": cannot create (" << LibraryError() << ")";
}

Hdf5Writer::~Hdf5Writer() {
  if (file_ >= 0) H5Fclose(file_);
}

std::string Hdf5Writer::Where(const std::string& name) const {
  return path_ + ", dataset '" + name + "'";
}

template <typename Dtype>
void Hdf5Writer::Write(const std::string& name, const std::vector<int>& shape,
                       const Dtype* values) {
  const std::vector<hsize_t> dims = Dims(shape);
  Handle space(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr), H5Sclose);
  Handle links = IntermediateGroups();
  Handle dataset(H5Dcreate2(file_, name.c_str(), NativeType<Dtype>(), space.get(), links.get(),
                            H5P_DEFAULT, H5P_DEFAULT),
                 H5Dclose);
  DOPPIO_ENSURE(dataset.ok()) << Where(name) << ": cannot create (" << LibraryError() << ")";
  DOPPIO_ENSURE(
      H5Dwrite(dataset.get(), NativeType<Dtype>(), H5S_ALL, H5S_ALL, H5P_DEFAULT, values) >= 0)
      << Where(name) << ": cannot write (" << LibraryError() << ")";
}

template <typename Dtype>
void Hdf5Writer::Append(const std::string& name, const std::vector<int>& shape,
                        const Dtype* values) {
  DOPPIO_ENSURE(!shape.empty()) << Where(name) << ": cannot append a scalar";
  const std::vector<hsize_t> rows = Dims(shape);
  const int rank = static_cast<int>(rows.size());
  if (H5Lexists(file_, name.c_str(), H5P_DEFAULT) <= 0) {
    H5Eclear2(H5E_DEFAULT);
    std::vector<hsize_t> start = rows, limit = rows, chunk = rows;
    start[0] = 0;
    limit[0] = H5S_UNLIMITED;
    chunk[0] = std::max<hsize_t>(rows[0], 1);
    for (hsize_t& d : chunk) d = std::max<hsize_t>(d, 1);
    Handle space(H5Screate_simple(rank, start.data(), limit.data()), H5Sclose);
    Handle create(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
    H5Pset_chunk(create.get(), rank, chunk.data());
    Handle links = IntermediateGroups();
    Handle made(H5Dcreate2(file_, name.c_str(), NativeType<Dtype>(), space.get(), links.get(),
                           create.get(), H5P_DEFAULT),
                H5Dclose);
    DOPPIO_ENSURE(made.ok()) << Where(name) << ": cannot create (" << LibraryError() << ")";
  }
  Handle dataset(H5Dopen2(file_, name.c_str(), H5P_DEFAULT), H5Dclose);
  Handle old_space(H5Dget_space(dataset.get()), H5Sclose);
  DOPPIO_ENSURE(H5Sget_simple_extent_ndims(old_space.get()) == rank)
      << Where(name) << ": rows of " << rank << " axes do not fit the rows written before";
  std::vector<hsize_t> size(rank);
  H5Sget_simple_extent_dims(old_space.get(), size.data(), nullptr);
  for (int i = 1; i < rank; ++i) {
    DOPPIO_ENSURE(size[i] == rows[i]) << Where(name) << ": axis " << i << " has " << rows[i]
                                      << " here but " << size[i] << " in the rows written before";
  }
  std::vector<hsize_t> offset(rank, 0);
  offset[0] = size[0];
  size[0] += rows[0];
  DOPPIO_ENSURE(H5Dset_extent(dataset.get(), size.data()) >= 0)
      << Where(name) << ": cannot grow (" << LibraryError() << ")";
  Handle file_space(H5Dget_space(dataset.get()), H5Sclose);
  H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, offset.data(), nullptr, rows.data(),
                      nullptr);
  Handle memory_space(H5Screate_simple(rank, rows.data(), nullptr), H5Sclose);
  DOPPIO_ENSURE(H5Dwrite(dataset.get(), NativeType<Dtype>(), memory_space.get(), file_space.get(),
                         H5P_DEFAULT, values) >= 0)
      << Where(name) << ": cannot write (" << LibraryError() << ")";
}

void Hdf5Writer::WriteInt(const std::string& name, std::int64_t value) {
  // Caffe's layout: a one-dimensional dataset of one element.
  const hsize_t one = 1;
  Handle space(H5Screate_simple(1, &one, nullptr), H5Sclose);
  Handle links = IntermediateGroups();
  Handle dataset(H5Dcreate2(file_, name.c_str(), H5T_NATIVE_INT64, space.get(), links.get(),
                            H5P_DEFAULT, H5P_DEFAULT),
                 H5Dclose);
  DOPPIO_ENSURE(dataset.ok()) << Where(name) << ": cannot create (" << LibraryError() << ")";
  DOPPIO_ENSURE(H5Dwrite(dataset.get(), H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, &value) >=
                0)
      << Where(name) << ": cannot write (" << LibraryError() << ")";
}

void Hdf5Writer::WriteString(const std::string& name, const std::string& value) {
  // A scalar fixed-length string, as Caffe's H5LTmake_dataset_string writes it.
  Handle type(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(type.get(), value.size() + 1);
  H5Tset_strpad(type.get(), H5T_STR_NULLTERM);
  Handle space(H5Screate(H5S_SCALAR), H5Sclose);
  Handle links = IntermediateGroups();
  Handle dataset(H5Dcreate2(file_, name.c_str(), type.get(), space.get(), links.get(), H5P_DEFAULT,
                            H5P_DEFAULT),
                 H5Dclose);
  DOPPIO_ENSURE(dataset.ok()) << Where(name) << ": cannot create (" << LibraryError() << ")";
  DOPPIO_ENSURE(H5Dwrite(dataset.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, value.c_str()) >=
                0)
      << Where(name) << ": cannot write (" << LibraryError() << ")";
}

void Hdf5Writer::CreateGroup(const std::string& name) {
  Handle links = IntermediateGroups();
  Handle group(H5Gcreate2(file_, name.c_str(), links.get(), H5P_DEFAULT, H5P_DEFAULT), H5Gclose);
  DOPPIO_ENSURE(group.ok()) << path_ << ": cannot create group '" << name << "' (" << LibraryError()
                            << ")";
}

void Hdf5Writer::Flush() {
  DOPPIO_ENSURE(H5Fflush(file_, H5F_SCOPE_GLOBAL) >= 0)
      << path_ << ": cannot flush (" << LibraryError() << ")";
}

std::string Hdf5Writer::Image() {
  Flush();
  const ssize_t size = H5Fget_file_image(file_, nullptr, 0);
  DOPPIO_ENSURE(size >= 0) << "cannot take the image of an HDF5 file (" << LibraryError() << ")";
  std::string bytes(static_cast<std::size_t>(size), '\0');
  DOPPIO_ENSURE(H5Fget_file_image(file_, bytes.data(), bytes.size()) == size)
      << "cannot take the image of an HDF5 file (" << LibraryError() << ")";
  return bytes;
}

template void Hdf5Writer::Write<float>(const std::string&, const std::vector<int>&, const float*);
template void Hdf5Writer::Write<double>(const std::string&, const std::vector<int>&, const double*);
template void Hdf5Writer::Append<float>(const std::string&, const std::vector<int>&, const float*);
template void Hdf5Writer::Append<double>(const std::string&, const std::vector<int>&,
                                         const double*);

}  // namespace doppio
