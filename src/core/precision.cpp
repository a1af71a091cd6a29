#include "doppio/core/precision.hpp"

#include <algorithm>
#include <cctype>
#include <sstream>

#include "doppio/device/gpu_context.hpp"
#include "doppio/device/onednn.hpp"
#include "doppio/util/error.hpp"

namespace doppio {

std::string PrecisionName(Precision precision) {
  switch (precision) {
    case FP32:
      return "fp32";
    case TF32:
      return "tf32";
    case BF16:
      return "bf16";
    case FP16:
      return "fp16";
    case PRECISION_DEFAULT:
      break;
  }
  return "default";
}

std::string DescribePrecision(const LayerPrecision& precision) {
  if (precision.math == precision.storage) return PrecisionName(precision.storage);
  return PrecisionName(precision.storage) + "/" + PrecisionName(precision.math);
}

Precision ParsePrecision(const std::string& text, const std::string& what) {
  std::string lower = text;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (Precision precision : {FP32, TF32, BF16, FP16}) {
    if (lower == PrecisionName(precision)) return precision;
  }
  DOPPIO_FAIL() << what << " must be fp32, tf32, bf16 or fp16, not '" << text << "'";
}

Precision RequestedPrecision(const LayerParameter& layer, Precision net) {
  if (NamesItsPrecision(layer)) return layer.precision();
  const std::string& type = layer.type();
  const bool needs_range = type == "Softmax" || type == "Accuracy" ||
                           (type.size() > 4 && type.compare(type.size() - 4, 4, "Loss") == 0);
  return needs_range ? FP32 : net;
}

std::string GpuLacksPrecision(Precision precision, int capability) {
  const int needed = precision == FP16 ? 70 : (precision == TF32 || precision == BF16 ? 80 : 0);
  if (capability >= needed) return "";
  std::ostringstream why;
  why << PrecisionName(precision) << " needs compute capability " << needed / 10 << "."
      << needed % 10 << " or later (" << (needed == 70 ? "Volta" : "Ampere")
      << "'s tensor cores), this GPU has " << capability / 10 << "." << capability % 10;
  return why.str();
}

void CheckPrecisionRuns(Precision precision, const GpuContext* gpu, const std::string& where) {
  if (precision == PRECISION_DEFAULT || precision == FP32) return;
  const std::string name = PrecisionName(precision);
  if (gpu != nullptr) {
#ifdef DOPPIO_WITH_CUDA
    const std::string lacks = GpuLacksPrecision(precision, gpu->compute_capability());
    DOPPIO_ENSURE(lacks.empty()) << where << ": precision " << name << " on " << gpu->Describe()
                                 << ": " << lacks;
#endif
    return;
  }
  DOPPIO_ENSURE(precision == BF16) << where << ": precision " << name << " on the CPU: "
                                   << (precision == TF32 ? "TF32 is the GPU tensor cores' format"
                                                         : "oneDNN 2.6 trains in fp16 on no CPU")
                                   << "; the CPU trains in fp32 or, with AVX512-BF16, bf16";
#ifdef DOPPIO_WITH_ONEDNN
  const std::string missing = OnednnBf16Missing();
  DOPPIO_ENSURE(missing.empty()) << where << ": precision bf16 on the CPU " << missing;
#else
  DOPPIO_FAIL() << where << ": precision bf16 on the CPU runs on oneDNN, which this build lacks "
                << "(built with DOPPIO_ONEDNN=OFF)";
#endif
}

}  // namespace doppio
