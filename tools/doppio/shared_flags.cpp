#include "shared_flags.hpp"

#include <cstdlib>

#include "common_flags.hpp"
#include "doppio/core/precision.hpp"
#include "doppio/util/error.hpp"

DEFINE_int32(batch, 0, "time, scale: override the batch size of the net's inputs (0 keeps it).");
DEFINE_string(json, "",
              "time, scale: also write the results to this file as JSON (time: the per-layer "
              "times, which `doppio scale --time_json` reads; scale: the predicted rows).");
DEFINE_string(input_shape, "",
              "time, scale: C,H,W of the images a data layer would produce, instead of the "
              "shape read from its source or its crop_size (docs/training.md).");
DEFINE_string(
    engine, "",
    "time, scale: run every layer that the named engine (CAFFE, CUDNN, ONEDNN) can run on "
    "it; empty keeps each layer's own choice.");
DEFINE_string(
    sync, "overlap",
    "train, scale: how MPI ranks combine gradients: overlap (allreduce gradient buckets while "
    "backward runs), reduce_bcast (reduce to rank 0, update there, broadcast the "
    "weights) or blocking (one allreduce after backward).");
DEFINE_double(bucket_mb, 25,
              "train, scale: size of a gradient bucket in MB (the first is at most 256 KB).");
DEFINE_string(precision, "",
              "train, time: fp32, tf32 (GPU), bf16 (CPU with AVX512-BF16) or fp16 (mixed "
              "precision, docs/precision.md); wins over the solver's and the net's precision. "
              "Empty keeps theirs.");

namespace doppio {

std::vector<int> ImageShapeFromFlag() {
  std::vector<int> shape;
  for (const auto& part : SplitCommaList(FLAGS_input_shape)) {
    char* end = nullptr;
    const long value = std::strtol(part.c_str(), &end, 10);
    DOPPIO_ENSURE(*end == '\0' && value > 0 && value <= (1 << 20))
        << "--input_shape needs C,H,W of positive integers, got '" << FLAGS_input_shape << "'";
    shape.push_back(static_cast<int>(value));
  }
  DOPPIO_ENSURE(shape.empty() || shape.size() == 3)
      << "--input_shape needs C,H,W, got '" << FLAGS_input_shape << "'";
  return shape;
}

Precision PrecisionFromFlag(Precision fallback) {
  if (FLAGS_precision.empty()) return fallback;
  return ParsePrecision(FLAGS_precision, "--precision");
}

}  // namespace doppio
