#pragma once

namespace doppio {

// Choices for the CPU engines, the counterpart of GpuOptions: whoever runs the nets (a tool
// from its flags, a test) builds one and hands it to the Solver or Net, which gives it to
// every layer before its SetUp (Layer::cpu_options), so no layer reads a process-wide
// setting. Read when a layer prepares its primitives.
struct CpuOptions {
  // oneDNN convolutions may run Winograd's algorithm where oneDNN has a jit kernel for the
  // shape (1.3-2.7x faster on ResNet-50's 3x3 shapes; within 1e-3 of the direct algorithm's
  // results instead of 1e-4, a trade like TF32 on the GPU). Off, every oneDNN convolution
  // runs the direct algorithm, which the tests compare to the CAFFE engine more tightly.
  bool onednn_winograd = true;
};

}  // namespace doppio
