#include "doppio/core/blob.hpp"

#include <glog/logging.h>

#include <climits>
#include <cmath>
#include <type_traits>

#include "doppio/device/gpu_context.hpp"
#include "doppio/device/gpu_math.hpp"
#include "doppio/util/math_functions.hpp"

namespace doppio {

namespace {
#ifdef DOPPIO_WITH_CUDA
// The context to compute on when the newest values of `memory` are on the device (only
// there, or `include_synced`: on both sides, where the device keeps them there); else null.
GpuContext* DeviceHolding(const SyncedMemory& memory, bool include_synced) {
  const SyncedMemory::Head head = memory.head();
  const bool on_device = head == SyncedMemory::Head::kDevice ||
                         (include_synced && head == SyncedMemory::Head::kSynced);
  return on_device ? memory.gpu_context().get() : nullptr;
}
#endif
}  // namespace

std::string ShapeString(const std::vector<int>& shape) {
  std::ostringstream out;
  for (int d : shape) out << d << " ";
  out << "(";
  long long count = 1;
  for (int d : shape) count *= d;
  out << count << ")";
  return out.str();
}

template <typename Dtype>
Blob<Dtype>::Blob(const std::vector<int>& shape) {
  Reshape(shape);
}

template <typename Dtype>
void Blob<Dtype>::Reshape(const std::vector<int>& shape) {
  DOPPIO_ENSURE(static_cast<int>(shape.size()) <= kMaxBlobAxes)
      << "blob shape has " << shape.size() << " axes; at most " << kMaxBlobAxes << " allowed";
  long long count = 1;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    DOPPIO_ENSURE(shape[i] >= 0) << "blob dimension " << i << " is negative (" << shape[i]
                                 << ") in shape " << ShapeString(shape);
    count *= shape[i];
    DOPPIO_ENSURE(count <= INT_MAX) << "blob shape " << ShapeString(shape) << " is too large";
  }
  shape_ = shape;
  count_ = static_cast<int>(count);
  // An empty blob still gets (empty) buffers, so its accessors work.
  if (count_ > capacity_ || !data_) {
    capacity_ = count_;
    data_ = std::make_shared<SyncedMemory>(capacity_ * sizeof(Dtype));
    ++data_generation_;
    diff_ = std::make_shared<SyncedMemory>(capacity_ * sizeof(Dtype));
  }
}

template <typename Dtype>
void Blob<Dtype>::Reshape(const BlobShape& shape) {
  std::vector<int> dims;
  for (int i = 0; i < shape.dim_size(); ++i) {
    DOPPIO_ENSURE(shape.dim(i) >= 0 && shape.dim(i) <= INT_MAX)
        << "blob dimension " << i << " is out of range (" << shape.dim(i) << ")";
    dims.push_back(static_cast<int>(shape.dim(i)));
  }
  Reshape(dims);
}

template <typename Dtype>
void Blob<Dtype>::Reshape(int num, int channels, int height, int width) {
  Reshape(std::vector<int>{num, channels, height, width});
}

template <typename Dtype>
std::string Blob<Dtype>::shape_string() const {
  return ShapeString(shape_);
}

template <typename Dtype>
int Blob<Dtype>::count(int start_axis, int end_axis) const {
  CHECK_LE(start_axis, end_axis);
  CHECK_GE(start_axis, 0);
  CHECK_LE(end_axis, num_axes());
  int count = 1;
  for (int i = start_axis; i < end_axis; ++i) count *= shape_[i];
  return count;
}

template <typename Dtype>
int Blob<Dtype>::CanonicalAxisIndex(int axis_index) const {
  DOPPIO_ENSURE(axis_index >= -num_axes() && axis_index < num_axes())
      << "axis " << axis_index << " out of range for a " << num_axes() << "-d blob of shape "
      << shape_string();
  return axis_index < 0 ? axis_index + num_axes() : axis_index;
}

template <typename Dtype>
int Blob<Dtype>::LegacyShape(int index) const {
  DOPPIO_ENSURE(num_axes() <= 4) << "legacy 4-d accessor used on a " << num_axes()
                                 << "-d blob of shape " << shape_string();
  if (index >= num_axes()) return 1;
  return shape_[index];
}

template <typename Dtype>
int Blob<Dtype>::offset(int n, int c, int h, int w) const {
  return ((n * channels() + c) * height() + h) * width() + w;
}

template <typename Dtype>
int Blob<Dtype>::offset(const std::vector<int>& indices) const {
  CHECK_LE(static_cast<int>(indices.size()), num_axes());
  int offset = 0;
  for (int i = 0; i < num_axes(); ++i) {
    offset *= shape_[i];
    if (i < static_cast<int>(indices.size())) offset += indices[i];
  }
  return offset;
}

template <typename Dtype>
const Dtype* Blob<Dtype>::cpu_data() const {
  CHECK(data_);
  return static_cast<const Dtype*>(data_->cpu_data());
}

template <typename Dtype>
const Dtype* Blob<Dtype>::cpu_diff() const {
  CHECK(diff_);
  return static_cast<const Dtype*>(diff_->cpu_data());
}

template <typename Dtype>
Dtype* Blob<Dtype>::mutable_cpu_data() {
  CHECK(data_);
  return static_cast<Dtype*>(data_->mutable_cpu_data());
}

template <typename Dtype>
Dtype* Blob<Dtype>::mutable_cpu_diff() {
  CHECK(diff_);
  return static_cast<Dtype*>(diff_->mutable_cpu_data());
}

#ifdef DOPPIO_WITH_CUDA
template <typename Dtype>
const Dtype* Blob<Dtype>::gpu_data(GpuContext& gpu) const {
  CHECK(data_);
  return static_cast<const Dtype*>(data_->gpu_data(gpu));
}

template <typename Dtype>
const Dtype* Blob<Dtype>::gpu_diff(GpuContext& gpu) const {
  CHECK(diff_);
  return static_cast<const Dtype*>(diff_->gpu_data(gpu));
}

template <typename Dtype>
Dtype* Blob<Dtype>::mutable_gpu_data(GpuContext& gpu) {
  CHECK(data_);
  return static_cast<Dtype*>(data_->mutable_gpu_data(gpu));
}

template <typename Dtype>
Dtype* Blob<Dtype>::mutable_gpu_diff(GpuContext& gpu) {
  CHECK(diff_);
  return static_cast<Dtype*>(diff_->mutable_gpu_data(gpu));
}
#endif

template <typename Dtype>
void Blob<Dtype>::ShareData(const Blob& other) {
  CHECK_EQ(count_, other.count());
  data_ = other.data();
  ++data_generation_;
}

template <typename Dtype>
void Blob<Dtype>::ShareDiff(const Blob& other) {
  CHECK_EQ(count_, other.count());
  diff_ = other.diff();
}

template <typename Dtype>
void Blob<Dtype>::SetDataMemory(std::shared_ptr<SyncedMemory> memory) {
  CHECK_EQ(memory->size(), count_ * sizeof(Dtype));
  data_ = std::move(memory);
  capacity_ = count_;
  ++data_generation_;
}

template <typename Dtype>
void Blob<Dtype>::ExchangeData(std::shared_ptr<SyncedMemory>* memory) {
  CHECK_EQ((*memory)->size(), count_ * sizeof(Dtype));
  data_.swap(*memory);
  capacity_ = count_;
  ++data_generation_;
}

template <typename Dtype>
void Blob<Dtype>::SetDiffMemory(std::shared_ptr<SyncedMemory> memory) {
  CHECK_EQ(memory->size(), count_ * sizeof(Dtype));
  diff_ = std::move(memory);
  capacity_ = count_;
}

template <typename Dtype>
void Blob<Dtype>::Update() {
  if (count_ == 0) return;
#ifdef DOPPIO_WITH_CUDA
  if (GpuContext* gpu = DeviceHolding(*data_, true)) {
    gpu_axpy<Dtype>(*gpu, count_, Dtype(-1), gpu_diff(*gpu), mutable_gpu_data(*gpu));
    return;
  }
#endif
  cpu_axpy<Dtype>(count_, Dtype(-1), cpu_diff(), mutable_cpu_data());
}

template <typename Dtype>
Dtype Blob<Dtype>::asum_data() const {
  if (count_ == 0) return Dtype(0);
#ifdef DOPPIO_WITH_CUDA
  if (GpuContext* gpu = DeviceHolding(*data_, false)) return gpu_asum(*gpu, count_, gpu_data(*gpu));
#endif
  return cpu_asum(count_, cpu_data());
}

template <typename Dtype>
Dtype Blob<Dtype>::asum_diff() const {
  if (count_ == 0) return Dtype(0);
#ifdef DOPPIO_WITH_CUDA
  if (GpuContext* gpu = DeviceHolding(*diff_, false)) return gpu_asum(*gpu, count_, gpu_diff(*gpu));
#endif
  return cpu_asum(count_, cpu_diff());
}

template <typename Dtype>
Dtype Blob<Dtype>::sumsq_data() const {
  if (count_ == 0) return Dtype(0);
#ifdef DOPPIO_WITH_CUDA
  if (GpuContext* gpu = DeviceHolding(*data_, false)) {
    return gpu_dot(*gpu, count_, gpu_data(*gpu), gpu_data(*gpu));
  }
#endif
  return cpu_dot(count_, cpu_data(), cpu_data());
}

template <typename Dtype>
Dtype Blob<Dtype>::sumsq_diff() const {
  if (count_ == 0) return Dtype(0);
#ifdef DOPPIO_WITH_CUDA
  if (GpuContext* gpu = DeviceHolding(*diff_, false)) {
    return gpu_dot(*gpu, count_, gpu_diff(*gpu), gpu_diff(*gpu));
  }
#endif
  return cpu_dot(count_, cpu_diff(), cpu_diff());
}

template <typename Dtype>
void Blob<Dtype>::scale_data(Dtype factor) {
  if (count_ == 0) return;
#ifdef DOPPIO_WITH_CUDA
  if (GpuContext* gpu = DeviceHolding(*data_, true)) {
    gpu_scal(*gpu, count_, factor, mutable_gpu_data(*gpu));
    return;
  }
#endif
  cpu_scal(count_, factor, mutable_cpu_data());
}

template <typename Dtype>
void Blob<Dtype>::scale_diff(Dtype factor) {
  if (count_ == 0) return;
#ifdef DOPPIO_WITH_CUDA
  if (GpuContext* gpu = DeviceHolding(*diff_, true)) {
    gpu_scal(*gpu, count_, factor, mutable_gpu_diff(*gpu));
    return;
  }
#endif
  cpu_scal(count_, factor, mutable_cpu_diff());
}

template <typename Dtype>
void Blob<Dtype>::CopyFrom(const Blob& source, bool copy_diff, bool reshape) {
  if (source.shape() != shape_) {
    DOPPIO_ENSURE(reshape) << "cannot copy a blob of shape " << source.shape_string()
                           << " into one of shape " << shape_string();
    ReshapeLike(source);
  }
  if (count_ == 0) return;
#ifdef DOPPIO_WITH_CUDA
  if (GpuContext* gpu = DeviceHolding(copy_diff ? *source.diff() : *source.data(), false)) {
    if (copy_diff) {
      gpu_copy(*gpu, count_, source.gpu_diff(*gpu), mutable_gpu_diff(*gpu));
    } else {
      gpu_copy(*gpu, count_, source.gpu_data(*gpu), mutable_gpu_data(*gpu));
    }
    return;
  }
#endif
  if (copy_diff) {
    cpu_copy(count_, source.cpu_diff(), mutable_cpu_diff());
  } else {
    cpu_copy(count_, source.cpu_data(), mutable_cpu_data());
  }
}

std::vector<int> BlobProtoShape(const BlobProto& proto) {
  std::vector<int> shape;
  if (proto.has_shape()) {
    for (int i = 0; i < proto.shape().dim_size(); ++i) {
      shape.push_back(static_cast<int>(proto.shape().dim(i)));
    }
  } else if (proto.has_num() || proto.has_channels() || proto.has_height() || proto.has_width()) {
    shape = {proto.num(), proto.channels(), proto.height(), proto.width()};
  } else {
    // Neither form set: a flat vector of whatever data it carries.
    shape = {std::max(proto.data_size(), proto.double_data_size())};
  }
  return shape;
}

template <typename Dtype>
bool Blob<Dtype>::ShapeEquals(const BlobProto& other) const {
  std::vector<int> other_shape = BlobProtoShape(other);
  if (!other.has_shape() && other_shape.size() == 4 && num_axes() <= 4) {
    // Legacy protos pad with leading 1s: compare right-aligned, as Caffe does (a 2-d
    // InnerProduct weight M x K is stored as 1 x 1 x M x K in V1 models).
    for (int i = 0; i < 4; ++i) {
      const int axis = num_axes() - 4 + i;
      if ((axis < 0 ? 1 : shape_[axis]) != other_shape[i]) return false;
    }
    return true;
  }
  return shape_ == other_shape;
}

template <typename Dtype>
void Blob<Dtype>::FromProto(const BlobProto& proto, bool reshape) {
  std::vector<int> proto_shape = BlobProtoShape(proto);
  if (reshape) {
    Reshape(proto_shape);
  } else {
    DOPPIO_ENSURE(ShapeEquals(proto))
        << "shape mismatch: stored blob has shape " << ShapeString(proto_shape)
        << " but the net expects " << shape_string();
  }
  Dtype* data = mutable_cpu_data();
  if (proto.double_data_size() > 0) {
    DOPPIO_ENSURE(proto.double_data_size() == count_)
        << "blob has " << proto.double_data_size() << " values for shape " << shape_string();
    for (int i = 0; i < count_; ++i) data[i] = static_cast<Dtype>(proto.double_data(i));
  } else {
    DOPPIO_ENSURE(proto.data_size() == count_)
        << "blob has " << proto.data_size() << " values for shape " << shape_string();
    for (int i = 0; i < count_; ++i) data[i] = static_cast<Dtype>(proto.data(i));
  }
  if (proto.double_diff_size() > 0 || proto.diff_size() > 0) {
    Dtype* diff = mutable_cpu_diff();
    if (proto.double_diff_size() == count_) {
      for (int i = 0; i < count_; ++i) diff[i] = static_cast<Dtype>(proto.double_diff(i));
    } else if (proto.diff_size() == count_) {
      for (int i = 0; i < count_; ++i) diff[i] = static_cast<Dtype>(proto.diff(i));
    }
  }
}

template <typename Dtype>
void Blob<Dtype>::ToProto(BlobProto* proto, bool write_diff) const {
  proto->Clear();
  for (int d : shape_) proto->mutable_shape()->add_dim(d);
  const Dtype* data = cpu_data();
  if (std::is_same<Dtype, double>::value) {
    proto->mutable_double_data()->Reserve(count_);
    for (int i = 0; i < count_; ++i) proto->add_double_data(data[i]);
  } else {
    proto->mutable_data()->Reserve(count_);
    for (int i = 0; i < count_; ++i) proto->add_data(static_cast<float>(data[i]));
  }
  if (write_diff) {
    const Dtype* diff = cpu_diff();
    for (int i = 0; i < count_; ++i) {
      if (std::is_same<Dtype, double>::value) {
        proto->add_double_diff(diff[i]);
      } else {
        proto->add_diff(static_cast<float>(diff[i]));
      }
    }
  }
}

DOPPIO_INSTANTIATE_CLASS(Blob);

}  // namespace doppio
