#pragma once

// How the oneDNN engines read and write parameter blobs, which stay in Caffe's layout in the
// net's arena (builds with oneDNN only).
#ifdef DOPPIO_WITH_ONEDNN

#include <cstdint>

#include "doppio/core/blob.hpp"
#include "doppio/layers/onednn_tensor.hpp"

namespace doppio {

// A parameter blob's data in a primitive's preferred layout; where the layouts agree the blob
// itself is used. `kept`: the copy is kept from one call to the next and reordered again only
// when the blob's storage was written since (a solver update, a weights load:
// SyncedMemory::write_count), for layers that only run forward (TEST nets), where nothing
// writes the weights between calls. Otherwise it is reordered at each call into the call's
// workspace (pass it to OnednnPlaceInWorkspace): a training step updates the weights between
// any two forwards anyway, and a kept copy of every convolution's weights for forward and
// another for backward cost 49 MiB on GoogLeNet, more than Caffe's whole workspace.
class OnednnParamData {
 public:
  void Init(const dnnl::engine& engine, const dnnl::memory::desc& user,
            const dnnl::memory::desc& primitive, bool kept);
  std::size_t transient_bytes() const { return cache_ ? 0 : tensor_.transient_bytes(); }
  void Place(void* at) {
    if (!cache_) tensor_.Place(at);
  }
  const dnnl::memory& Get(dnnl::stream& stream, const Blob<float>& blob);

 private:
  OnednnTensor tensor_;
  // The kept copy in the primitive's layout (where it differs and `kept`).
  dnnl::memory cache_;
  const SyncedMemory* storage_ = nullptr;
  std::uint64_t writes_ = 0;
  bool valid_ = false;
};

// A parameter blob's largest magnitude (OnednnMaxMagnitude), scanned again only when its
// storage was written since the last scan, as a kept OnednnParamData reorders.
class OnednnParamMagnitude {
 public:
  float Get(const Blob<float>& blob);

 private:
  const SyncedMemory* storage_ = nullptr;
  std::uint64_t writes_ = 0;
  float magnitude_ = 0;
};

// A parameter gradient a primitive computes: it writes a scratch buffer in its own layout,
// which AddTo then adds into the blob's diff in Caffe's layout, as Caffe's layers accumulate
// parameter gradients. Where the layouts differ the scratch is first reordered into a second,
// plain one and added with an axpy: oneDNN 2.6 has no jit reorder from its blocked weights
// layouts to Caffe's with a sum, and its generic one took 18 ms for ResNet-50's 2048x1024
// weights where the plain reorder and the add take about 1 ms. Both buffers live only during
// Backward, in the thread's HostWorkspace (OnednnPlaceInWorkspace).
class OnednnParamGradient {
 public:
  void Init(const dnnl::engine& engine, const dnnl::memory::desc& primitive,
            const dnnl::memory::desc& user);
  std::size_t transient_bytes() const {
    return scratch_ ? OnednnAligned(scratch_.get_desc().get_size()) + PlainBytes() : 0;
  }
  void Place(void* at);
  const dnnl::memory& scratch() const { return scratch_; }
  void AddTo(dnnl::stream& stream, float* diff);

 private:
  std::size_t PlainBytes() const { return plain_ ? plain_.get_desc().get_size() : 0; }

  dnnl::memory scratch_;
  // The scratch in Caffe's layout, where the primitive's differs.
  dnnl::memory plain_;
  dnnl::reorder to_plain_;
  std::size_t count_ = 0;
};

}  // namespace doppio

#endif  // DOPPIO_WITH_ONEDNN
