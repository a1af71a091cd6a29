#include "common_flags.hpp"

#include <glog/logging.h>

#include <algorithm>
#include <cstdlib>
#include <utility>

#include "doppio/device/gpu_context.hpp"
#include "doppio/parallel/gpu_selection.hpp"

DEFINE_string(model, "", "The model definition (net prototxt).");
DEFINE_int32(iterations, 50, "The number of iterations to run.");
DEFINE_string(phase, "", "Network phase, TRAIN or TEST (each command has its own default).");
DEFINE_string(gpu, "",
              "Run on a GPU: '0', a list such as '0,1' (the MPI ranks of a node take its entries "
              "in turn) or 'all' (local rank i on GPU i). Empty runs on the CPU.");
DEFINE_string(weights, "",
              "Comma-separated .caffemodel files (or Caffe's HDF5 weights, named *.h5) to "
              "initialise the net from (layers copied by name). Cannot be combined with "
              "--snapshot.");
DEFINE_int32(level, 0, "The level of the net state, for include/exclude rules.");
DEFINE_string(stage, "", "Comma-separated stages of the net state, for include/exclude rules.");
DEFINE_bool(tf32_conv, true,
            "GPU: let float32 cuDNN convolutions use TF32 tensor cores (PyTorch's default too).");
DEFINE_bool(tf32_gemm, false,
            "GPU: let float32 cuBLAS matrix products use TF32 tensor cores (off, as PyTorch).");
DEFINE_string(cudnn_algo, "heuristic",
              "GPU: how cuDNN convolutions pick algorithms: 'heuristic' (cuDNN's heuristics) "
              "or 'measure' (time each candidate once per input shape).");
DEFINE_string(cudnn_algo_cache, "auto",
              "GPU, with --cudnn_algo=measure: the file the measured algorithms are kept in, so "
              "that later runs skip the search; 'auto': $XDG_CACHE_HOME/doppio/"
              "cudnn_conv_algos.txt (~/.cache/doppio/ without it); '': none.");
DEFINE_int32(cudnn_workspace_mb, 1024,
             "GPU: the most scratch memory (MB) one cuDNN convolution may use.");
DEFINE_bool(onednn_winograd, true,
            "CPU: let oneDNN run 3x3 stride-1 convolutions with Winograd's algorithm where it "
            "has a fast kernel (1.3-2.7x faster; results within 1e-3 of the direct "
            "algorithm's instead of 1e-4, as TF32 on the GPU).");

DEFINE_int32(threads, 0,
             "CPU threads of this process (OpenBLAS, oneDNN and Doppio's pool together); 0: "
             "OMP_NUM_THREADS when set, else the cores this process may use shared among the "
             "ranks on its node.");

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

CpuOptions CpuOptionsFromFlags() {
  CpuOptions options;
  options.onednn_winograd = FLAGS_onednn_winograd;
  return options;
}

std::vector<int> GpusFromFlag() {
  if (FLAGS_gpu.empty()) return {};
#ifndef DOPPIO_WITH_CUDA
  DOPPIO_FAIL() << "--gpu=" << FLAGS_gpu
                << " given, but this build of doppio has no GPU support (built with "
                   "DOPPIO_CUDA=OFF); run without --gpu to use the CPU";
#endif
  const GpuRequest request = ParseGpuRequest(FLAGS_gpu);
  if (request.all) return {-1};
  return request.ids;
}

namespace {
// --cudnn_algo_cache's file: 'auto' is the user's cache folder (XDG's base directories).
std::string ConvAlgoCachePath(const std::string& flag) {
  if (flag != "auto") return flag;
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  const char* home = std::getenv("HOME");
  std::string folder;
  if (xdg != nullptr && xdg[0] == '/') {
    folder = xdg;
  } else if (home != nullptr && home[0] != '\0') {
    folder = std::string(home) + "/.cache";
  } else {
    return "";  // nowhere to keep it: measure every run
  }
  return folder + "/doppio/cudnn_conv_algos.txt";
}
}  // namespace

std::shared_ptr<GpuContext> GpuFromFlags(const LocalRanks& local, Precision precision) {
  if (GpusFromFlag().empty()) return nullptr;
  GpuOptions options;
  options.tf32_conv = FLAGS_tf32_conv;
  options.tf32_gemm = FLAGS_tf32_gemm;
  if (precision == FP32 || precision == TF32) {
    const bool tf32 = precision == TF32;
    for (const char* flag : {"tf32_conv", "tf32_gemm"}) {
      const gflags::CommandLineFlagInfo info = gflags::GetCommandLineFlagInfoOrDie(flag);
      DOPPIO_ENSURE(info.is_default || (info.current_value == "true") == tf32)
          << "--" << flag << "=" << info.current_value << " contradicts precision "
          << (tf32 ? "tf32" : "fp32");
    }
    options.tf32_conv = options.tf32_gemm = tf32;
  }
  if (FLAGS_cudnn_algo == "heuristic") {
    options.conv_algo = ConvAlgoSearch::kHeuristic;
  } else if (FLAGS_cudnn_algo == "measure") {
    options.conv_algo = ConvAlgoSearch::kMeasure;
  } else {
    DOPPIO_FAIL() << "--cudnn_algo must be 'heuristic' or 'measure', not '" << FLAGS_cudnn_algo
                  << "'";
  }
  DOPPIO_ENSURE(FLAGS_cudnn_workspace_mb >= 0)
      << "--cudnn_workspace_mb must be >= 0, not " << FLAGS_cudnn_workspace_mb;
  options.conv_workspace_limit = static_cast<std::size_t>(FLAGS_cudnn_workspace_mb) << 20;
  options.conv_algo_cache = ConvAlgoCachePath(FLAGS_cudnn_algo_cache);
  const GpuRequest request = ParseGpuRequest(FLAGS_gpu);
  const int count = GpuDeviceCount();
  if (request.all) {
    DOPPIO_ENSURE(count > 0) << "--gpu=all given, but " << GpuUnavailableReason()
                             << "; run without --gpu to use the CPU";
  }
  // Set per task by Slurm's --gpus-per-task / --gpu-bind; set for the node by a user, it
  // names more GPUs than one, or is shared, which the PCI check finds.
  const bool visible_per_rank = std::getenv("CUDA_VISIBLE_DEVICES") != nullptr;
  return GpuContext::Create(PickLocalGpu(request, local.rank, local.size, count, visible_per_rank),
                            options);
}

}  // namespace doppio
