// `doppio time`: forward and backward timing of a net, per layer, like `caffe time`.
#include <gflags/gflags.h>
#include <glog/logging.h>

#include <algorithm>
#include <cstdio>

#include "command.hpp"
#include "common_flags.hpp"
#include "doppio/core/activation_sharing.hpp"
#include "doppio/core/net.hpp"
#include "doppio/device/gpu_context.hpp"
#include "doppio/util/io.hpp"
#include "doppio/util/math_functions.hpp"
#include "doppio/util/thread_pool.hpp"
#include "engine_override.hpp"
#include "layer_profile.hpp"
#include "memory_report.hpp"
#include "shared_flags.hpp"
#include "synthetic_inputs.hpp"

namespace doppio {
namespace {

int TimeCommand() {
  DOPPIO_ENSURE(!FLAGS_model.empty()) << "doppio time needs --model=FILE";
  DOPPIO_ENSURE(FLAGS_iterations > 0) << "--iterations must be positive";
  NetParameter param = ReadNetParamsFromTextFile(FLAGS_model);
  param.mutable_state()->set_phase(PhaseFromFlag(TRAIN));
  param.mutable_state()->set_level(FLAGS_level);
  for (const auto& stage : StagesFromFlag()) param.mutable_state()->add_stage(stage);
  param = WithSyntheticInputs(param, FLAGS_batch, ImageShapeFromFlag());
  if (!FLAGS_engine.empty()) param = WithEngine(param, FLAGS_engine);
  param.set_precision(PrecisionFromFlag(param.precision()));
  std::shared_ptr<GpuContext> gpu = GpuFromFlags(LocalRanksFromLauncher(), param.precision());
  Net<float> net(param, 1701, gpu, CpuOptionsFromFlags());
  // As `doppio train` does: no one reads the activations' gradients after Backward.
  ShareDiffMemory(&net);
  // GPU work is asynchronous: a layer's time is only known once its kernels have finished.
  const auto finish = [&gpu] {
#ifdef DOPPIO_WITH_CUDA
    if (gpu) gpu->Synchronize();
#endif
  };

  LayerProfile profile = MeasureLayerProfile(&net, FLAGS_iterations, finish);
  profile.device = gpu ? gpu->Describe() : "CPU, " + std::to_string(ParallelParts()) + " threads";
  const auto& layers = profile.layers;
  LOG(INFO) << "Average time per layer: ";
  for (const LayerTiming& layer : layers) {
    const std::string pad(10 - std::min<size_t>(10, layer.name.size()), ' ');
    LOG(INFO) << pad << layer.name << "\tforward: " << layer.forward_ms << " ms.";
    LOG(INFO) << pad << layer.name << "\tbackward: " << layer.backward_ms << " ms.";
  }
  LOG(INFO) << "Average Forward pass: " << profile.forward_ms << " ms.";
  LOG(INFO) << "Average Backward pass: " << profile.backward_ms << " ms.";
  LOG(INFO) << "Average Forward-Backward: " << profile.total_ms << " ms.";
  LOG(INFO) << "Total Time: " << profile.total_ms * FLAGS_iterations << " ms.";
  LOG(INFO) << "*** Benchmark ends ***";
  LogMemoryReport({&net}, gpu.get());

  // The same figures as a table on stdout.
  const double all = profile.forward_ms + profile.backward_ms;
  // precision: the layer's storage, and its math where that differs ("fp32/tf32").
  std::printf("%-28s %-18s %-7s %-9s %12s %12s %7s\n", "layer", "type", "engine", "precision",
              "forward ms", "backward ms", "share");
  for (const LayerTiming& layer : layers) {
    const double f = layer.forward_ms, b = layer.backward_ms;
    std::printf("%-28s %-18s %-7s %-9s %12.3f %12.3f %6.1f%%\n", layer.name.c_str(),
                layer.type.c_str(), layer.engine.c_str(), layer.precision.c_str(), f, b,
                all > 0 ? 100.0 * (f + b) / all : 0.0);
  }
  std::printf("%-28s %-18s %-7s %-9s %12.3f %12.3f %6.1f%%\n", "total", "", "", "",
              profile.forward_ms, profile.backward_ms, 100.0);
  std::printf("Average Forward-Backward: %.3f ms (%d iterations, %s)\n", all, FLAGS_iterations,
              profile.device.c_str());
  if (!FLAGS_json.empty()) {
    WriteFileAtomically(LayerProfileToJson(profile, FLAGS_model), FLAGS_json);
    LOG(INFO) << "Wrote the per-layer times to " << FLAGS_json;
  }
  std::printf("%s\n", FormatMemoryReport(MeasureMemory({&net}, nullptr)).c_str());
  if (gpu) std::printf("%s\n", FormatMemoryReport(MeasureMemory({&net}, gpu.get())).c_str());
  return 0;
}

}  // namespace
}  // namespace doppio

DOPPIO_REGISTER_COMMAND(time, "benchmark forward and backward of a net, per layer",
                        doppio::TimeCommand);
