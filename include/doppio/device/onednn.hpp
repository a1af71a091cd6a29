#pragma once

// Helpers shared by the oneDNN engines (builds with oneDNN only): errors, threads, memory
// descriptors in Caffe's layout, and tensors that a primitive may want in another layout.
#ifdef DOPPIO_WITH_ONEDNN

#include <oneapi/dnnl/dnnl.hpp>

#include <string>
#include <vector>

namespace doppio {

// Throws Error naming `who` (a layer's Describe()), the primitive and oneDNN's status.
[[noreturn]] void ThrowOnednnError(const std::string& who, const std::string& primitive,
                                   const dnnl::error& error);

// Runs fn() and turns a dnnl::error it throws into an Error naming who and the primitive,
// so that a status oneDNN refuses with reaches the user as a message, never an abort.
template <typename Fn>
decltype(auto) OnednnCall(const std::string& who, const std::string& primitive, Fn&& fn) {
  try {
    return fn();
  } catch (const dnnl::error& error) {
    ThrowOnednnError(who, primitive, error);
  }
}

// Sets the calling thread's OpenMP thread count, which oneDNN reads when it creates and runs a
// primitive, to the threads Doppio's other CPU kernels use: the current ThreadPool's (`doppio
// time --threads`), else OpenBLAS's (OPENBLAS_NUM_THREADS, OMP_NUM_THREADS, the cores, or the
// share of them a rank was given). oneDNN and OpenBLAS layers then take turns on the same
// cores, and a rank given one thread runs oneDNN on one thread.
void UseOnednnThreads();

// A dense float tensor of `dims` in Caffe's layout (row-major: nchw, oi, ...).
dnnl::memory::desc OnednnPlainDesc(const dnnl::memory::dims& dims);

// One tensor a primitive reads or writes: kept in Caffe's layout by its blob and, where the
// primitive prefers another layout, also in that one, with the reorders between the two. The
// copy in the primitive's layout lives only during one layer call: its buffer is placed in
// the calling thread's HostWorkspace (OnednnPlaceInWorkspace) before the call uses it.
class OnednnTensor {
 public:
  // `user`: the blob's layout; `primitive`: the layout the primitive descriptor asks for.
  void Init(const dnnl::engine& engine, const dnnl::memory::desc& user,
            const dnnl::memory::desc& primitive);
  // The bytes of the copy in the primitive's layout (0 where the layouts agree), and where
  // it lies for the current call.
  std::size_t transient_bytes() const { return reordered_ ? primitive_.get_desc().get_size() : 0; }
  void Place(void* at) {
    if (reordered_) primitive_.set_data_handle(at);
  }
  // For a primitive to read: the memory to pass it, holding the contents of `user` (reordered
  // on `stream` when the layouts differ).
  const dnnl::memory& Read(dnnl::stream& stream, const void* user);
  // For a primitive to write: the memory to pass it; after it ran, Publish(stream) puts the
  // result in `user` (a reorder where the layouts differ, nothing otherwise).
  const dnnl::memory& Write(void* user);
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
};

// Places the transient buffers of one layer call (objects with transient_bytes() and
// Place(void*): OnednnTensor, OnednnParamGradient) one after another in the calling thread's
// HostWorkspace. They hold nothing from one call to the next, so every oneDNN layer shares
// the one block, as large as the largest call needs, instead of each keeping its own for the
// life of the net. Call it at the start of each Forward or Backward, before the others' use.
std::size_t OnednnAligned(std::size_t bytes);
void* OnednnWorkspace(std::size_t bytes);
template <typename... Buffers>
void OnednnPlaceInWorkspace(Buffers&... buffers) {
  const std::size_t total = (OnednnAligned(buffers.transient_bytes()) + ... + 0);
  char* at = static_cast<char*>(OnednnWorkspace(total));
  ((buffers.Place(at), at += OnednnAligned(buffers.transient_bytes())), ...);
}

}  // namespace doppio

#endif  // DOPPIO_WITH_ONEDNN
