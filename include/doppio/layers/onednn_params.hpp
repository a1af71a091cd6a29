#pragma once

// How the oneDNN engines read and write parameter blobs, which stay in Caffe's layout in the
// net's arena (builds with oneDNN only).
#ifdef DOPPIO_WITH_ONEDNN

#include <cstdint>

#include "doppio/core/blob.hpp"
#include "doppio/layers/onednn_tensor.hpp"

namespace doppio {

// A parameter blob's data in a primitive's preferred layout. The reorder is redone only when
// the blob's storage was written since the last one (after a solver update, a weights load:
// SyncedMemory::write_count), or after Init; where the layouts agree the blob itself is used.
class OnednnCachedParam {
 public:
  void Init(const dnnl::engine& engine, const dnnl::memory::desc& user,
            const dnnl::memory::desc& primitive);
  const dnnl::memory& Get(dnnl::stream& stream, const Blob<float>& blob);

 private:
  OnednnTensor tensor_;
  // The copy in the primitive's layout, kept from one call to the next (where it differs).
  dnnl::memory cache_;
  const SyncedMemory* storage_ = nullptr;
  std::uint64_t writes_ = 0;
  bool valid_ = false;
};

// A parameter gradient a primitive computes: it writes a scratch buffer in its own layout,
// which AddTo then adds into the blob's diff in Caffe's layout (one reorder with a sum), as
// Caffe's layers accumulate parameter gradients. The scratch buffer lives only during
// Backward, in the thread's HostWorkspace (OnednnPlaceInWorkspace).
class OnednnParamGradient {
 public:
  void Init(const dnnl::engine& engine, const dnnl::memory::desc& primitive,
            const dnnl::memory::desc& user);
  std::size_t transient_bytes() const { return scratch_ ? scratch_.get_desc().get_size() : 0; }
  void Place(void* at) {
    if (scratch_) scratch_.set_data_handle(at);
  }
  const dnnl::memory& scratch() const { return scratch_; }
  void AddTo(dnnl::stream& stream, float* diff);

 private:
  dnnl::memory scratch_;
  dnnl::memory user_;
  dnnl::reorder accumulate_;
};

}  // namespace doppio

#endif  // DOPPIO_WITH_ONEDNN
