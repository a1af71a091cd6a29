#pragma once

// Mixed precision's policy (docs/precision.md): the precision a net asks each of its layers
// for, what a layer says it runs in, and whether this machine runs the precision asked. The
// layers decide how they run it; this file decides what is asked.
#include <string>

#include "doppio/core/common.hpp"

namespace doppio {
class GpuContext;
}

namespace doppio {

// What a layer keeps its activations and their gradients in, and what it computes in
// (storage FP32 with math TF32: a cuDNN convolution on tensor cores). Never PRECISION_DEFAULT.
struct LayerPrecision {
  Precision storage = FP32;
  Precision math = FP32;
};

// "fp32", "tf32", "bf16", "fp16": as the log, `doppio time` and --precision name them.
std::string PrecisionName(Precision precision);
// "bf16"; "fp32/tf32" where the math is not the storage.
std::string DescribePrecision(const LayerPrecision& precision);
// --precision's value (fp32, tf32, bf16, fp16, in any case); an Error naming `what` and the
// values otherwise.
Precision ParsePrecision(const std::string& text, const std::string& what);

// The precision a net in `net` asks `layer` for: the layer's own `precision` where it names
// one; FP32 for the layers that need fp32's range (losses, Softmax, Accuracy: NVIDIA's Caffe
// and PyTorch's autocast keep them in fp32 too); else the net's.
Precision RequestedPrecision(const LayerParameter& layer, Precision net);

// Whether `layer` named its precision itself: then running another is an error (Net::Init
// names the layer), where a layer that only inherits BF16 and cannot run it runs FP32.
inline bool NamesItsPrecision(const LayerParameter& layer) {
  return layer.precision() != PRECISION_DEFAULT;
}

// Why a GPU of compute capability `capability` (90 for 9.0) cannot run `precision` ("" when
// it can): TF32 and BF16 need Ampere (8.0), FP16 the tensor cores of Volta (7.0).
std::string GpuLacksPrecision(Precision precision, int capability);

// An Error naming `where` (the solver file, the flag) when this machine cannot run
// `precision` on its CPU (`gpu` null) or on `gpu`: BF16 on a CPU without AVX512-BF16 (the
// CPU flag it lacks), FP16 and TF32 on the CPU (oneDNN trains neither here), and on a GPU
// what GpuLacksPrecision says (naming the GPU).
void CheckPrecisionRuns(Precision precision, const GpuContext* gpu, const std::string& where);

}  // namespace doppio
