#include "doppio/core/synced_memory.hpp"

#include <glog/logging.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "doppio/core/common.hpp"
#include "doppio/device/gpu_context.hpp"
#include "doppio/device/gpu_util.hpp"

namespace doppio {

namespace {
// 64-byte alignment keeps every row a whole number of cache lines for the SIMD kernels.
constexpr std::size_t kAlignment = 64;

// Zeroed host memory, aligned to kAlignment inside the block calloc returns (*block, for
// free). Unlike aligned_alloc + memset, calloc leaves the fresh pages of a large block
// untouched (the kernel hands them out zeroed), so a buffer becomes resident only where it
// is written: the parameter arena, filled blob by blob while each blob's own buffer is
// freed, never holds the parameters twice.
void* AllocateHost(std::size_t size, void** block) {
  *block = std::calloc(1, size + kAlignment);
  // Blobs are sized by the user's files (shapes, batch sizes): a net too large for this
  // machine is theirs to fix, reported as such rather than as a crash.
  DOPPIO_ENSURE(*block != nullptr) << "cannot allocate " << size
                                   << " bytes of host memory for a blob (is the net or its "
                                      "batch too large for this machine?)";
  const auto address = reinterpret_cast<std::uintptr_t>(*block);
  return reinterpret_cast<void*>((address + kAlignment - 1) / kAlignment * kAlignment);
}
}  // namespace

SyncedMemory::SyncedMemory(std::size_t size) : size_(size) {}

SyncedMemory::SyncedMemory(std::shared_ptr<SyncedMemory> parent, std::size_t offset,
                           std::size_t size)
    : parent_(std::move(parent)), offset_(offset), size_(size) {
  CHECK(parent_ != nullptr);
  CHECK_LE(offset_ + size_, parent_->size());
}

SyncedMemory::~SyncedMemory() {
  FreeHostCopy();
#ifdef DOPPIO_WITH_CUDA
  // The device block goes back to the allocator's cache; later users of it are ordered
  // after the kernels that may still read it (same stream).
  if (gpu_ptr_ != nullptr && gpu_) gpu_->allocator().Free(gpu_ptr_);
#endif
}

void SyncedMemory::FreeHostCopy() {
  if (cpu_ptr_ == nullptr) return;
#ifdef DOPPIO_WITH_CUDA
  if (host_pinned_) {
    cudaFreeHost(cpu_ptr_);
    cpu_ptr_ = nullptr;
    return;
  }
#endif
  std::free(cpu_block_);
  cpu_block_ = nullptr;
  cpu_ptr_ = nullptr;
}

SyncedMemory::Head SyncedMemory::head() const { return parent_ ? parent_->head() : head_; }

const std::shared_ptr<GpuContext>& SyncedMemory::gpu_context() const {
  return parent_ ? parent_->gpu_context() : gpu_;
}

void SyncedMemory::ToCpu() {
  switch (head_) {
    case Head::kUninitialized:
#ifdef DOPPIO_WITH_CUDA
      AllocateHostCopy();
      if (host_pinned_) std::memset(cpu_ptr_, 0, size_);
#else
      cpu_ptr_ = AllocateHost(size_, &cpu_block_);
#endif
      head_ = Head::kHost;
      break;
    case Head::kHost:
    case Head::kSynced:
      break;
    case Head::kDevice:
#ifdef DOPPIO_WITH_CUDA
      if (cpu_ptr_ == nullptr) AllocateHostCopy();
      WidenOnGpu();
      if (size_ > 0) {
        gpu_->MakeCurrent();
        // Ordered after every kernel queued on the stream, then waited for.
        DOPPIO_CUDA_CHECK(
            cudaMemcpyAsync(cpu_ptr_, gpu_ptr_, size_, cudaMemcpyDeviceToHost, gpu_->stream()));
        DOPPIO_CUDA_CHECK(cudaStreamSynchronize(gpu_->stream()));
      }
      head_ = Head::kSynced;
#else
      LOG(FATAL) << "device memory requested in a build without CUDA";
#endif
      break;
  }
}

void SyncedMemory::Canonicalize() {
  if (!layout_) return;
  layout_->ToCanonical(cpu_ptr_, size_);
  layout_.reset();
}

const void* SyncedMemory::cpu_data() {
  if (parent_) return static_cast<const char*>(parent_->cpu_data()) + offset_;
  ToCpu();
  Canonicalize();
  return cpu_ptr_;
}

void* SyncedMemory::mutable_cpu_data() {
  if (parent_) return static_cast<char*>(parent_->mutable_cpu_data()) + offset_;
  ToCpu();
  Canonicalize();
  head_ = Head::kHost;
  ++write_count_;
  return cpu_ptr_;
}

const void* SyncedMemory::raw_cpu_data() {
  // A view's bytes are canonical (its parent's cpu_data sees to that).
  if (parent_) return cpu_data();
  ToCpu();
  return cpu_ptr_;
}

const std::shared_ptr<const HostLayout>& SyncedMemory::cpu_layout() const {
  static const std::shared_ptr<const HostLayout> canonical;
  return parent_ ? canonical : layout_;
}

void* SyncedMemory::mutable_raw_cpu_data(std::shared_ptr<const HostLayout> layout) {
  if (parent_) {
    // Parameters and their gradients live in views of the arena, which snapshots, weight
    // files and the gradient allreduce read as Caffe lays them out.
    DOPPIO_ENSURE(layout == nullptr)
        << "a view of another buffer (the parameter arena) cannot hold a non-canonical layout";
    return mutable_cpu_data();
  }
  ToCpu();
  layout_ = std::move(layout);
  head_ = Head::kHost;
  ++write_count_;
  return cpu_ptr_;
}

#ifdef DOPPIO_WITH_CUDA

void SyncedMemory::AllocateHostCopy() {
  if (host_pinned_) {
    DOPPIO_CUDA_CHECK(
        cudaHostAlloc(&cpu_ptr_, size_ == 0 ? kAlignment : size_, cudaHostAllocDefault));
  } else {
    cpu_ptr_ = AllocateHost(size_, &cpu_block_);
  }
}

void SyncedMemory::Bind(GpuContext& gpu) {
  if (!gpu_) {
    gpu_ = gpu.shared_from_this();
    return;
  }
  DOPPIO_ENSURE(gpu_.get() == &gpu)
      << "a blob's device memory belongs to " << gpu_->Describe()
      << "'s context, but another GPU context (" << gpu.Describe()
      << ") accessed it; nets that share blobs or weights must share one GpuContext";
}

void SyncedMemory::ToGpu(GpuContext& gpu) {
  Bind(gpu);
  switch (head_) {
    case Head::kUninitialized:
      gpu_->MakeCurrent();
      ReserveGpu(size_);
      if (size_ > 0) DOPPIO_CUDA_CHECK(cudaMemsetAsync(gpu_ptr_, 0, size_, gpu_->stream()));
      head_ = Head::kDevice;
      break;
    case Head::kHost:
      Canonicalize();
      gpu_->MakeCurrent();
      ReserveGpu(size_);
      if (size_ > 0) {
        DOPPIO_CUDA_CHECK(
            cudaMemcpyAsync(gpu_ptr_, cpu_ptr_, size_, cudaMemcpyHostToDevice, gpu_->stream()));
        // The host copy may be written as soon as we return (mutable_cpu_data).
        DOPPIO_CUDA_CHECK(cudaStreamSynchronize(gpu_->stream()));
      }
      head_ = Head::kSynced;
      break;
    case Head::kDevice:
    case Head::kSynced:
      break;
  }
}

bool SyncedMemory::ReserveGpu(std::size_t bytes) {
  if (gpu_ptr_ != nullptr && gpu_bytes_ >= bytes) return false;
  // Freed in stream order: the kernels queued before still read the old block first.
  if (gpu_ptr_ != nullptr) gpu_->allocator().Free(gpu_ptr_);
  gpu_ptr_ = gpu_->allocator().Allocate(bytes);
  gpu_bytes_ = bytes;
  return true;
}

void SyncedMemory::WidenOnGpu() {
  if (gpu_storage_ == GpuStorage::kFloat32) return;
  const long long count = static_cast<long long>(size_ / sizeof(float));
  const std::size_t narrow_bytes = static_cast<std::size_t>(count) * GpuStorageBytes(gpu_storage_);
  gpu_->MakeCurrent();
  void* narrow = gpu_ptr_;
  if (gpu_bytes_ >= size_) {
    // Element i moves from byte 2i to byte 4i of one block: through a copy of the 16-bit
    // half, since the kernel's threads run in no order.
    narrow = gpu_->allocator().Allocate(narrow_bytes);
    DOPPIO_CUDA_CHECK(
        cudaMemcpyAsync(narrow, gpu_ptr_, narrow_bytes, cudaMemcpyDeviceToDevice, gpu_->stream()));
  } else {
    // A half-sized block: the full one is new, and the old one is the source.
    gpu_ptr_ = gpu_->allocator().Allocate(size_);
    gpu_bytes_ = size_;
  }
  gpu_convert(*gpu_, count, gpu_storage_, narrow, GpuStorage::kFloat32, gpu_ptr_);
  gpu_->allocator().Free(narrow);
  gpu_storage_ = GpuStorage::kFloat32;
}

const void* SyncedMemory::gpu_data(GpuContext& gpu) {
  if (parent_) return static_cast<const char*>(parent_->gpu_data(gpu)) + offset_;
  ToGpu(gpu);
  WidenOnGpu();
  return gpu_ptr_;
}

void* SyncedMemory::mutable_gpu_data(GpuContext& gpu) {
  if (parent_) return static_cast<char*>(parent_->mutable_gpu_data(gpu)) + offset_;
  ToGpu(gpu);
  WidenOnGpu();
  head_ = Head::kDevice;
  ++write_count_;
  return gpu_ptr_;
}

const void* SyncedMemory::raw_gpu_data(GpuContext& gpu) {
  if (HoldsSixteenBitViews()) return parent_->raw_gpu_data(gpu);
  if (parent_) return gpu_data(gpu);
  ToGpu(gpu);
  return gpu_ptr_;
}

void* SyncedMemory::mutable_raw_gpu_data(GpuContext& gpu, GpuStorage storage) {
  if (HoldsSixteenBitViews()) return parent_->mutable_raw_gpu_data(gpu, storage);
  if (parent_) {
    DOPPIO_ENSURE(storage == GpuStorage::kFloat32)
        << "a view of another buffer (the parameter arena) cannot hold " << GpuStorageName(storage)
        << " elements";
    return mutable_gpu_data(gpu);
  }
  Bind(gpu);
  gpu_->MakeCurrent();
  // 16-bit elements take half a block; one that has been widened keeps its full size, so
  // that a buffer written in 16 bits and read in fp32 every iteration does not hold both.
  ReserveGpu(storage == GpuStorage::kFloat32 ? size_
                                             : size_ / sizeof(float) * GpuStorageBytes(storage));
  layout_.reset();  // the host bytes, in whatever layout, are superseded whole
  gpu_storage_ = storage;
  head_ = Head::kDevice;
  ++write_count_;
  return gpu_ptr_;
}

bool SyncedMemory::host_pinned() const { return parent_ ? parent_->host_pinned() : host_pinned_; }

void SyncedMemory::PinHostMemory() {
  if (parent_) {
    parent_->PinHostMemory();
    return;
  }
  if (host_pinned_) return;
  if (cpu_ptr_ == nullptr) {
    host_pinned_ = true;  // allocated pinned when first needed
    return;
  }
  void* pinned = nullptr;
  DOPPIO_CUDA_CHECK(cudaHostAlloc(&pinned, size_ == 0 ? kAlignment : size_, cudaHostAllocDefault));
  std::memcpy(pinned, cpu_ptr_, size_);
  std::free(cpu_block_);
  cpu_block_ = nullptr;
  cpu_ptr_ = pinned;
  host_pinned_ = true;
}

void SyncedMemory::AsyncGpuPush(GpuContext& gpu, cudaStream_t stream) {
  CHECK(parent_ == nullptr) << "AsyncGpuPush on a view";
  CHECK(head_ == Head::kHost) << "AsyncGpuPush needs the newest data on the host";
  Canonicalize();
  Bind(gpu);
  gpu_->MakeCurrent();
  if (ReserveGpu(size_)) {
    // A block from the cache may still be read by kernels queued on the compute stream;
    // `stream` is not ordered after them.
    gpu_->Synchronize();
  }
  if (size_ > 0) {
    DOPPIO_CUDA_CHECK(cudaMemcpyAsync(gpu_ptr_, cpu_ptr_, size_, cudaMemcpyHostToDevice, stream));
  }
  head_ = Head::kSynced;
}

#endif  // DOPPIO_WITH_CUDA

}  // namespace doppio
