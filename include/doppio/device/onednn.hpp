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
// primitive prefers another layout, also in that one, with the reorders between the two.
class OnednnTensor {
 public:
  // `user`: the blob's layout; `primitive`: the layout the primitive descriptor asks for.
  void Init(const dnnl::engine& engine, const dnnl::memory::desc& user,
            const dnnl::memory::desc& primitive);
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

}  // namespace doppio

#endif  // DOPPIO_WITH_ONEDNN
