#pragma once

// The base of the oneDNN engine's layers (builds with oneDNN only).
#ifdef DOPPIO_WITH_ONEDNN

#include <oneapi/dnnl/dnnl.hpp>

#include <string>
#include <utility>

#include "doppio/core/common.hpp"
#include "doppio/device/onednn.hpp"

namespace doppio {

// A layer of the ONEDNN engine: `CaffeLayer` (the CAFFE engine's class, whose parameters,
// shapes and fallback kernels it keeps) with the CPU engine its primitives and memories are
// made for, the stream they run on, and the two ways it calls oneDNN:
// - Build(what, make) runs make(), which builds primitive descriptors, primitives and
//   memories, on oneDNN's threads (UseOnednnThreads: oneDNN reads the count when it builds a
//   primitive too);
// - Run(what, run) runs run(), which queues primitives on stream(), on those threads, then
//   waits for the stream: when Run returns, every output is written and may be read.
// Both turn a dnnl::error into an Error naming the layer (Describe) and `what`, so that a
// status oneDNN refuses with reaches the user as a message, never an abort. Neither places
// a call's transient tensors: OnednnPlaceInWorkspace does, before the Run that uses them.
//
// Mixed precision: where the net asks for BF16 (precision_request) and the layer's class
// builds its primitives in data_type() (RunsBf16), its activations and their gradients are
// bf16 in the primitives' layouts (half a blob's bytes, held in its buffer: OnednnTensor),
// computed with f32 accumulation; parameters and their gradients stay f32 in the arena. Other
// layers read such a blob in Caffe's layout and f32, converted by the blob's first accessor.
template <typename CaffeLayer>
class OnednnLayer : public CaffeLayer {
 public:
  explicit OnednnLayer(const LayerParameter& param) : CaffeLayer(param) {}

  LayerPrecision precision() const override {
    if (data_type() == dnnl::memory::data_type::bf16) return {BF16, BF16};
    return {};
  }

 protected:
  // Whether the class builds its primitives in data_type(); those that do say so.
  virtual bool RunsBf16() const { return false; }
  dnnl::memory::data_type data_type() const {
    return RunsBf16() && this->precision_request() == BF16 ? dnnl::memory::data_type::bf16
                                                           : dnnl::memory::data_type::f32;
  }

  const dnnl::engine& engine() const { return engine_; }
  dnnl::stream& stream() { return stream_; }

  template <typename Fn>
  void Build(const char* what, Fn&& make) {
    UseOnednnThreads();
    OnednnCall(this->Describe(), what, std::forward<Fn>(make));
  }
  template <typename Fn>
  void Run(const char* what, Fn&& run) {
    UseOnednnThreads();
    OnednnCall(this->Describe(), what, [&] {
      run();
      stream_.wait();
    });
  }

 private:
  dnnl::engine engine_{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream_{engine_};
};

}  // namespace doppio

#endif  // DOPPIO_WITH_ONEDNN
