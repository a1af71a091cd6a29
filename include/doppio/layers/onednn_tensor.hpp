#pragma once

// The tensors between a oneDNN layer's blobs and its primitives, and the blocked layouts the
// blobs may hold between oneDNN layers (builds with oneDNN only).
#ifdef DOPPIO_WITH_ONEDNN

#include <oneapi/dnnl/dnnl.hpp>

#include <cstdint>
#include <memory>
#include <vector>

#include "doppio/core/synced_memory.hpp"
#include "doppio/device/onednn.hpp"

namespace doppio {

// Whether oneDNN layers leave their outputs and bottom diffs in the primitive's (blocked)
// layout, in the blob's own buffer, for the next oneDNN layer to read as they are (on by
// default). Off, every oneDNN layer reads and writes Caffe's layout, as before blocked
// layouts were kept; the tests compare the two.
void SetOnednnKeepsBlockedLayouts(bool keep);
bool OnednnKeepsBlockedLayouts();

// The largest magnitude among `count` floats (in any layout: a oneDNN layout held in a blob
// has no padding): a NaN where one of them is, else infinity where one is infinite.
float OnednnMaxMagnitude(const float* data, int count);

// Whether `count` floats hold a NaN. oneDNN's MAX pooling, ReLU and softmax drop a NaN, so
// their layers run Caffe's kernels on an input that holds one.
bool OnednnHasNaN(const float* data, int count);

// The same for the `count` values of a blob's host bytes as they are held: floats, or bf16
// where a oneDNN layout of bf16 holds them (mixed precision), without converting them.
float OnednnHeldMaxMagnitude(SyncedMemory& memory, int count);
bool OnednnHeldHasNaN(SyncedMemory& memory, int count);

// A blob's host bytes held in a oneDNN layout (SyncedMemory's HostLayout): what a primitive
// wrote there, converted to Caffe's layout by the first ordinary accessor that reads them.
class OnednnLayout : public HostLayout {
 public:
  OnednnLayout(const dnnl::engine& engine, const dnnl::memory::desc& desc);
  const dnnl::memory::desc& desc() const { return desc_; }
  // Reorders into a scratch buffer of the calling thread, kept for the next conversion, and
  // copies back: never the thread's HostWorkspace, which the layer reading may be using.
  void ToCanonical(void* bytes, std::size_t size) const override;

 private:
  dnnl::engine engine_;
  dnnl::memory::desc desc_;
  dnnl::memory::desc plain_;
  dnnl::reorder to_plain_;
  dnnl::reorder copy_;
};

// The oneDNN layout a buffer's host bytes are held in, or null where they are in Caffe's.
const OnednnLayout* OnednnLayoutOf(const SyncedMemory& memory);

// One tensor a primitive reads or writes: kept in Caffe's layout by its blob and, where the
// primitive prefers another layout, also in that one, with the reorders between the two.
// Between oneDNN layers a blob's buffer may itself hold the primitive's layout (Read and
// Write of a SyncedMemory): then no copy and no reorder are made. Otherwise the copy in the
// primitive's layout lives only during one layer call: its buffer is placed in the calling
// thread's HostWorkspace (OnednnPlaceInWorkspace) before the call uses it.
class OnednnTensor {
 public:
  // `user`: the blob's layout; `primitive`: the layout the primitive descriptor asks for.
  void Init(const dnnl::engine& engine, const dnnl::memory::desc& user,
            const dnnl::memory::desc& primitive);
  // The bytes of the copy in the primitive's layout (0 where the layouts agree), and where
  // it lies for the current call.
  std::size_t transient_bytes() const { return reordered_ ? primitive_.get_desc().get_size() : 0; }
  void Place(void* at);
  // This tensor where Read(stream, blob) / Write(blob) of the coming call go through the copy
  // in the primitive's layout, else null (the blob's buffer holds that layout, or can): what
  // to pass OnednnPlaceInWorkspace. Read(void*) and Write(void*) always use the copy. The
  // answer holds until the blob is next read through Caffe's accessors, which turn it to
  // Caffe's layout: a call that reads one blob into two tensors places the second anyway.
  OnednnTensor* ForRead(const SyncedMemory& blob);
  OnednnTensor* ForWrite(const SyncedMemory& blob);
  // For a primitive to read: the memory to pass it, holding the contents of `user` (reordered
  // on `stream` when the layouts differ).
  const dnnl::memory& Read(dnnl::stream& stream, const void* user);
  // The same from a blob's buffer: its bytes as they are where they are held in the
  // primitive's layout, else its bytes in Caffe's layout, reordered where the layouts differ.
  const dnnl::memory& Read(dnnl::stream& stream, SyncedMemory& blob);
  // For a primitive to write: the memory to pass it; after it ran, Publish(stream) puts the
  // result in `user` (a reorder where the layouts differ, nothing otherwise).
  const dnnl::memory& Write(void* user);
  // The same into a blob's buffer, which the primitive overwrites whole: in place in the
  // primitive's layout where that takes no more bytes than Caffe's (no padding; bf16 takes
  // half), blocked
  // layouts are kept and the buffer is not a view (the buffer then holds an OnednnLayout),
  // else as Write(void*).
  const dnnl::memory& Write(SyncedMemory& blob);
  void Publish(dnnl::stream& stream);
  // The memory in the primitive's layout, as the last Read or Write left it.
  const dnnl::memory& primitive() const { return primitive_; }
  // Whether the primitive's layout differs from the blob's.
  bool reordered() const { return reordered_; }

 private:
  dnnl::memory user_;
  dnnl::memory primitive_;
  dnnl::reorder to_primitive_;
  dnnl::reorder to_user_;
  bool reordered_ = false;
  // The primitive's layout where a blob's buffer can hold it (at most Caffe's size).
  std::shared_ptr<const OnednnLayout> in_place_;
  // The last Write went to the transient copy, which Publish reorders into the blob.
  bool publish_ = false;
  // OnednnWorkspacePlacements() when Place put the copy in the workspace: a Read or Write
  // through a copy placed for another call is refused, never a write over another's bytes.
  std::uint64_t placed_ = 0;
  // Place's buffer is the caller's own (OnednnParamData's kept copy), valid for every call.
  bool kept_ = false;

  bool ReadsInPlace(const SyncedMemory& blob) const;
  bool WritesInPlace(const SyncedMemory& blob) const;
  dnnl::memory& Copy();

  friend class OnednnParamData;
  void Keep(void* at);
};

// OnednnPlaceInWorkspace for a number of tensors known only at run time (null: not used).
void OnednnPlaceAllInWorkspace(const std::vector<OnednnTensor*>& tensors);

// The layout a layer whose primitive works on any layout (element-wise, pooling, LRN, batch
// norm, sum) runs in for a tensor of `dims` in `type` (f32: the blob's own type; bf16: mixed
// precision): the oneDNN layout `memory` holds, where it has these dims and this type, else
// Caffe's in `type` (OnednnPlainDesc(dims, type)).
dnnl::memory::desc OnednnArrivingDesc(const SyncedMemory& memory, const dnnl::memory::dims& dims,
                                      dnnl::memory::data_type type = dnnl::memory::data_type::f32);

// The same for an element-wise primitive (ReLU, sum) over `count` values: any layout of the
// same elements in `type` serves, whatever its dims; else Caffe's, as one flat dimension.
dnnl::memory::desc OnednnElementwiseDesc(
    const SyncedMemory& memory, int count,
    dnnl::memory::data_type type = dnnl::memory::data_type::f32);

}  // namespace doppio

#endif  // DOPPIO_WITH_ONEDNN
