#pragma once

// Flags of every `doppio` command (the flags of some commands only: shared_flags.hpp).
#include <gflags/gflags.h>

#include <memory>
#include <string>
#include <vector>

#include "doppio/core/common.hpp"
#include "doppio/device/cpu_options.hpp"
#include "thread_budget.hpp"

DECLARE_string(model);
DECLARE_int32(iterations);
DECLARE_string(phase);
DECLARE_string(gpu);
DECLARE_string(weights);
DECLARE_int32(level);
DECLARE_string(stage);
DECLARE_bool(tf32_conv);
DECLARE_bool(tf32_gemm);
DECLARE_string(cudnn_algo);
DECLARE_int32(cudnn_workspace_mb);
DECLARE_bool(onednn_winograd);
DECLARE_int32(threads);

namespace doppio {

// --phase as a Phase; `fallback` when the flag is empty. Error on any other value.
Phase PhaseFromFlag(Phase fallback);
// --stage split at commas (empty entries dropped).
std::vector<std::string> StagesFromFlag();
// The CPU engines' options from their flags (--onednn_winograd), for the nets a command
// builds; a build without oneDNN has no layer that reads them.
CpuOptions CpuOptionsFromFlags();
// Splits "a,b,c" into its non-empty parts.
std::vector<std::string> SplitCommaList(const std::string& text);
// The device ids named by --gpu ("0,1" or "all"); empty for the CPU. Error when --gpu is
// given in a build without GPU support.
std::vector<int> GpusFromFlag();

class GpuContext;
// The GPU this process runs on, from --gpu and the GPU option flags; null without --gpu.
// The ranks of a node spread over its GPUs by their local rank (PickLocalGpu): --gpu=all
// gives each its own, a list is taken in order. Error when the device cannot be opened (no
// GPU on this machine, a bad id, more ranks than GPUs for --gpu=all, no GPU support).
// `precision` (the net's or the solver's, after --precision) sets TF32: FP32 turns it off for
// convolutions and matrix products, TF32 on for both; PRECISION_DEFAULT leaves --tf32_conv and
// --tf32_gemm, which must then agree with an explicit one.
std::shared_ptr<GpuContext> GpuFromFlags(const LocalRanks& local = LocalRanksFromLauncher(),
                                         Precision precision = PRECISION_DEFAULT);

}  // namespace doppio
