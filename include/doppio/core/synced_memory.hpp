#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "doppio/device/gpu_half.hpp"

#ifdef DOPPIO_WITH_CUDA
#include <cuda_runtime.h>
#endif

namespace doppio {

class GpuContext;

// A layout other than the canonical one (Caffe's row-major order) in which a SyncedMemory's
// host bytes may be held: the oneDNN engine leaves activations in its blocked layouts between
// its layers. core knows no oneDNN, so the engine implements the conversion.
class HostLayout {
 public:
  virtual ~HostLayout() = default;
  // Rewrites the `size` bytes at `bytes`, held in this layout, in the canonical one.
  virtual void ToCanonical(void* bytes, std::size_t size) const = 0;
};

// One buffer that lives in host memory and, in a CUDA build, in device memory; copies are
// made lazily on access. The head says where the newest bytes are.
//
// A SyncedMemory may also be a view of a byte range inside another one (the parameter
// arena): a view has no storage of its own and forwards every access to its parent, so the
// whole arena moves between host and device as one piece.
//
// Device side (CUDA builds only): the first gpu_data / mutable_gpu_data binds the buffer to
// that GpuContext; its device copy comes from the context's allocator and every transfer is
// ordered on the context's compute stream (a transfer to the host waits for the kernels
// queued before it). Using the buffer with another context afterwards is an Error.
class SyncedMemory {
 public:
  enum class Head { kUninitialized, kHost, kDevice, kSynced };

  SyncedMemory() = default;
  explicit SyncedMemory(std::size_t size);
  SyncedMemory(std::shared_ptr<SyncedMemory> parent, std::size_t offset, std::size_t size);
  ~SyncedMemory();
  SyncedMemory(const SyncedMemory&) = delete;
  SyncedMemory& operator=(const SyncedMemory&) = delete;

  const void* cpu_data();
  void* mutable_cpu_data();
  std::size_t size() const { return size_; }
  Head head() const;
  bool is_view() const { return parent_ != nullptr; }
  // The buffer that holds the bytes: for a view, its parent's; else this one.
  const SyncedMemory& storage() const { return parent_ ? parent_->storage() : *this; }
  // How many times write access was handed out (mutable_cpu_data, mutable_gpu_data) to the
  // bytes of the storage; a view counts its parent's. Caches derived from the contents (a
  // oneDNN engine's reordered weights) compare it to know when to refresh.
  std::uint64_t write_count() const { return parent_ ? parent_->write_count() : write_count_; }
  // For the engine that wrote them (oneDNN): the host bytes as they are, not converted, and
  // their layout (null: canonical); mutable_raw_cpu_data hands the host bytes out to be
  // overwritten whole in `layout` (null: canonical), leaving the old bytes unconverted, and
  // counts as a write. A view refuses a layout (Error): the parameter arena stays canonical.
  const void* raw_cpu_data();
  const std::shared_ptr<const HostLayout>& cpu_layout() const;
  void* mutable_raw_cpu_data(std::shared_ptr<const HostLayout> layout);
  // The context this buffer's device copy belongs to; null while it has none.
  const std::shared_ptr<GpuContext>& gpu_context() const;
  // What the device bytes hold: kFloat32 (canonical) unless a layer running BF16 or FP16 on
  // the GPU wrote 16-bit elements there (mutable_raw_gpu_data), one per float in the first
  // half of the buffer. Any other access (gpu_data, cpu_data and their mutable forms) first
  // widens them to fp32 on the device, so their readers never see 16 bits. A buffer that was
  // only ever written in 16 bits holds a device block of half its size.
  GpuStorage gpu_storage() const {
    if (!parent_) return gpu_storage_;
    return HoldsSixteenBitViews() ? parent_->gpu_storage() : GpuStorage::kFloat32;
  }
  // Marks a buffer whose views its users take one at a time, each from byte 0 (the net's
  // shared activations and gradients, core/activation_sharing.hpp): a view of it may then
  // hold 16-bit elements, which this buffer keeps track of as its own. Other views (the
  // parameter arena's) refuse them.
  void ShareViewsOneAtATime() { views_one_at_a_time_ = true; }

#ifdef DOPPIO_WITH_CUDA
  const void* gpu_data(GpuContext& gpu);
  void* mutable_gpu_data(GpuContext& gpu);
  // For the layers that keep activations in 16 bits: the device bytes as they are (see
  // gpu_storage), and the device bytes handed out to be overwritten whole as `storage`
  // (the old bytes are not transferred or converted), which counts as a write. A view
  // refuses 16 bits (Error: the parameter arena stays fp32) unless its buffer shares its
  // views one at a time.
  const void* raw_gpu_data(GpuContext& gpu);
  void* mutable_raw_gpu_data(GpuContext& gpu, GpuStorage storage);
  // Page-locks the host copy (cudaHostAlloc), which makes transfers faster and lets them be
  // asynchronous. Existing host contents are kept. For buffers uploaded every iteration.
  void PinHostMemory();
  bool host_pinned() const;
  // Starts copying the host contents to the device on `stream` and returns without waiting;
  // the head becomes synced. The caller must synchronise `stream` with the context's
  // compute stream before the device copy is read, and must not write the host copy until
  // the transfer is done. The host copy should be pinned (else the copy is synchronous).
  void AsyncGpuPush(GpuContext& gpu, cudaStream_t stream);
#endif

 private:
  void ToCpu();
  // Converts host bytes held in a HostLayout to the canonical layout.
  void Canonicalize();
#ifdef DOPPIO_WITH_CUDA
  void ToGpu(GpuContext& gpu);
  // Widens 16-bit device bytes to fp32 (gpu_storage), in a block of the full size.
  void WidenOnGpu();
  // Makes the device block at least `bytes` long; a new block does not keep the old bytes.
  // Returns whether it took a new block.
  bool ReserveGpu(std::size_t bytes);
  void Bind(GpuContext& gpu);
  void AllocateHostCopy();
#endif
  void FreeHostCopy();
  bool HoldsSixteenBitViews() const {
    return parent_ && offset_ == 0 && parent_->views_one_at_a_time_;
  }

  std::shared_ptr<SyncedMemory> parent_;
  std::size_t offset_ = 0;
  void* cpu_ptr_ = nullptr;
  void* cpu_block_ = nullptr;  // what the aligned cpu_ptr_ lies in (unpinned host copies)
  bool host_pinned_ = false;
  void* gpu_ptr_ = nullptr;
  // The device block's size: half of size_ while only 16-bit elements were ever written.
  std::size_t gpu_bytes_ = 0;
  std::shared_ptr<GpuContext> gpu_;
  std::size_t size_ = 0;
  Head head_ = Head::kUninitialized;
  std::uint64_t write_count_ = 0;
  bool views_one_at_a_time_ = false;
  // The layout of the host bytes; null: canonical. Set only while the head is the host.
  std::shared_ptr<const HostLayout> layout_;
  // What the device bytes hold; kFloat32 except while the head is the device.
  GpuStorage gpu_storage_ = GpuStorage::kFloat32;
};

}  // namespace doppio
