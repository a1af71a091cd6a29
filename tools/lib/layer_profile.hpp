#pragma once

#include <functional>
#include <string>
#include <vector>

#include "doppio/core/net.hpp"

namespace doppio {

// Forward and backward time of every layer of a net, averaged over iterations: what
// `doppio time` measures and prints, and what `doppio scale` replays.
struct LayerTiming {
  std::string name;
  std::string type;
  std::string engine;     // CAFFE, CUDNN, ONEDNN
  std::string precision;  // DescribePrecision: "fp32", "bf16", "fp32/tf32"
  double forward_ms = 0;
  double backward_ms = 0;
};

struct LayerProfile {
  std::vector<LayerTiming> layers;  // in the net's order
  // Whole passes (they include the per-layer timers' small overhead).
  double forward_ms = 0;
  double backward_ms = 0;
  double total_ms = 0;  // forward + backward as one wall time
  // One pass of the update over the parameter arena (Net::Update: data -= diff). The
  // solver's own arithmetic (momentum, weight decay) comes on top.
  double update_ms = 0;
  int batch = 0;       // of the net's first input
  int iterations = 0;  // averaged over
  std::string device;  // where it was measured ("CPU, 1 thread", a GPU's name) or how estimated
};

// Times `net` layer by layer, as `caffe time` does: one untimed forward and backward, then
// `iterations` passes timing every layer's Forward (run by the net, with what the net does
// around it) and Backward. `finish` waits for the
// device's queued work (GPU); it runs after every layer. Logs each iteration's time.
LayerProfile MeasureLayerProfile(Net<float>* net, int iterations,
                                 const std::function<void()>& finish);

// Estimated from the arithmetic of each layer at `tflops` (10^12 floating-point operations
// per second): convolutions and inner products 2 operations per multiply-add forward, twice
// that backward (weights and inputs, the inputs' only where they need a gradient); every
// other layer one operation per output element each way.
LayerProfile EstimateLayerProfile(const Net<float>& net, double tflops);

// The profile as JSON (`doppio time --json`), and back. Reading throws Error naming `source`
// and the field at fault.
std::string LayerProfileToJson(const LayerProfile& profile, const std::string& model);
LayerProfile LayerProfileFromJson(const std::string& text, const std::string& source);

}  // namespace doppio
