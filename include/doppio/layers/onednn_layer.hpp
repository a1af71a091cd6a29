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
template <typename CaffeLayer>
class OnednnLayer : public CaffeLayer {
 public:
  explicit OnednnLayer(const LayerParameter& param) : CaffeLayer(param) {}

 protected:
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
