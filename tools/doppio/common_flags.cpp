#include "common_flags.hpp"

#include <cstdlib>

DEFINE_string(model, "", "The model definition (net prototxt).");
DEFINE_int32(iterations, 50, "The number of iterations to run.");
DEFINE_string(phase, "", "Network phase, TRAIN or TEST (each command has its own default).");
DEFINE_string(gpu, "", "Run on these GPUs, e.g. '0' or '0,1', or 'all'. Empty runs on the CPU.");
DEFINE_string(weights, "",
              "Comma-separated .caffemodel files to initialise the net from (layers copied "
              "by name). Cannot be combined with --snapshot.");
DEFINE_int32(level, 0, "The level of the net state, for include/exclude rules.");
DEFINE_string(stage, "", "Comma-separated stages of the net state, for include/exclude rules.");

namespace doppio {

std::vector<std::string> SplitCommaList(const std::string& text) {
  std::vector<std::string> parts;
  std::string current;
  for (char c : text) {
    if (c == ',') {
      if (!current.empty()) parts.push_back(current);
      current.clear();
    } else {
      current += c;
    }
  }
  if (!current.empty()) parts.push_back(current);
  return parts;
}

Phase PhaseFromFlag(Phase fallback) {
  if (FLAGS_phase.empty()) return fallback;
  if (FLAGS_phase == "TRAIN" || FLAGS_phase == "train") return TRAIN;
  if (FLAGS_phase == "TEST" || FLAGS_phase == "test") return TEST;
  DOPPIO_FAIL() << "--phase must be TRAIN or TEST, not '" << FLAGS_phase << "'";
  return fallback;
}

std::vector<std::string> StagesFromFlag() { return SplitCommaList(FLAGS_stage); }

std::vector<int> GpusFromFlag() {
  std::vector<int> gpus;
  if (FLAGS_gpu.empty()) return gpus;
#ifndef DOPPIO_WITH_CUDA
  DOPPIO_FAIL() << "--gpu=" << FLAGS_gpu
                << " given, but this build of doppio has no GPU support (built with "
                   "DOPPIO_CUDA=OFF); leave --gpu out to run on the CPU";
#endif
  if (FLAGS_gpu == "all") return {-1};
  for (const std::string& part : SplitCommaList(FLAGS_gpu)) {
    char* end = nullptr;
    long id = std::strtol(part.c_str(), &end, 10);
    DOPPIO_ENSURE(end != part.c_str() && *end == '\0' && id >= 0)
        << "--gpu: '" << part << "' is not a device id";
    gpus.push_back(static_cast<int>(id));
  }
  return gpus;
}

}  // namespace doppio
