#pragma once

// Helpers shared by the oneDNN engines (builds with oneDNN only): errors, threads, memory
// descriptors, a primitive's arguments and implementation, and the placement of a layer
// call's transient buffers. The layers' base (layers/onednn_layer.hpp) runs primitives with
// them; the tensors between blobs and primitives are the layers' (layers/onednn_tensor.hpp).
#ifdef DOPPIO_WITH_ONEDNN

#include <oneapi/dnnl/dnnl.hpp>

#include <cstdint>
#include <string>
#include <unordered_map>
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

// A dense tensor of `dims` in Caffe's layout (row-major: nchw, oi, ...).
dnnl::memory::desc OnednnPlainDesc(const dnnl::memory::dims& dims,
                                   dnnl::memory::data_type type = dnnl::memory::data_type::f32);
// A tensor of `dims` in the layout the primitive prefers (format_tag::any).
dnnl::memory::desc OnednnAnyDesc(const dnnl::memory::dims& dims,
                                 dnnl::memory::data_type type = dnnl::memory::data_type::f32);

// Why oneDNN cannot compute in bf16 at the speed of this CPU ("lacks AVX512-BF16 ..."), or
// "" where it can: oneDNN emulates bf16 on plain AVX-512, slower than fp32, which would be a
// precision chosen for speed that runs slower.
std::string OnednnBf16Missing();

// A primitive's arguments, by DNNL_ARG_*.
using OnednnArgs = std::unordered_map<int, dnnl::memory>;

// Whether oneDNN implements `pd` with a kernel whose name holds `kind`: "jit" for the kernels
// it generates for the machine, against its plain C++ ones ("ref", "simple"), which are 7 to
// 37 times slower on the layers measured here; "wino" for Winograd's convolution.
bool OnednnImplementationIs(const dnnl::primitive_desc_base& pd, const char* kind);

// Places the transient buffers of one layer call (objects with transient_bytes() and
// Place(void*): OnednnTensor, OnednnParamGradient in layers/) one after another in the calling
// thread's HostWorkspace. They hold nothing from one call to the next, so every oneDNN layer shares
// the one block, as large as the largest call needs, instead of each keeping its own for the
// life of the net. Call it at the start of each Forward or Backward, before the others' use,
// with the buffers this call goes through: a null pointer is one it does not (a diff nobody
// propagates, a tensor read or written in place: OnednnTensor::ForRead, ForWrite), so the
// block is sized by what runs, not by what might.
std::size_t OnednnAligned(std::size_t bytes);
void* OnednnWorkspace(std::size_t bytes);
// Counts OnednnWorkspace's calls on this thread: a buffer placed before the latest call may
// lie where another buffer now does.
std::uint64_t OnednnWorkspacePlacements();
template <typename... Buffers>
void OnednnPlaceInWorkspace(Buffers*... buffers) {
  const std::size_t total = ((buffers ? OnednnAligned(buffers->transient_bytes()) : 0) + ... + 0);
  char* at = static_cast<char*>(OnednnWorkspace(total));
  ((buffers ? (buffers->Place(at), at += OnednnAligned(buffers->transient_bytes())) : at), ...);
}

}  // namespace doppio

#endif  // DOPPIO_WITH_ONEDNN
