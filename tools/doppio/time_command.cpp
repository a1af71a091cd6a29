// `doppio time`: forward and backward timing of a net, per layer, like `caffe time`.
#include <gflags/gflags.h>
#include <glog/logging.h>

#include <algorithm>
#include <cstdio>

#include "command.hpp"
#include "common_flags.hpp"
#include "doppio/core/net.hpp"
#include "doppio/device/gpu_context.hpp"
#include "doppio/util/io.hpp"
#include "doppio/util/math_functions.hpp"
#include "doppio/util/thread_pool.hpp"
#include "doppio/util/timer.hpp"
#include "engine_override.hpp"
#include "memory_report.hpp"
#include "synthetic_inputs.hpp"

DEFINE_int32(threads, 1, "time: CPU threads for the BLAS kernels.");
DEFINE_int32(batch, 0, "time: override the batch size of the net's inputs (0 keeps it).");
DEFINE_string(input_shape, "",
              "time: C,H,W of the images a data layer would produce, when it cannot be "
              "inferred (from transform_param.crop_size: 3 channels of crop x crop).");
DEFINE_string(engine, "",
              "time: run every layer that the named engine (CAFFE, CUDNN, ONEDNN) can run on "
              "it; empty keeps each layer's own choice.");

namespace doppio {
namespace {

std::vector<int> ImageShapeFlag() {
  std::vector<int> shape;
  for (const auto& part : SplitCommaList(FLAGS_input_shape)) shape.push_back(std::stoi(part));
  DOPPIO_ENSURE(shape.empty() || shape.size() == 3)
      << "--input_shape needs C,H,W, got '" << FLAGS_input_shape << "'";
  return shape;
}

int TimeCommand() {
  DOPPIO_ENSURE(!FLAGS_model.empty()) << "doppio time needs --model=FILE";
  DOPPIO_ENSURE(FLAGS_iterations > 0) << "--iterations must be positive";
  DOPPIO_ENSURE(FLAGS_threads > 0) << "--threads must be positive";
  // The layers split their work over this pool; BLAS runs inside its threads, single-threaded.
  ThreadPool pool(FLAGS_threads);
  ThreadPool::Scope use_pool(&pool);
  SetBlasThreads(1);
  NetParameter param = ReadNetParamsFromTextFile(FLAGS_model);
  param.mutable_state()->set_phase(PhaseFromFlag(TRAIN));
  param.mutable_state()->set_level(FLAGS_level);
  for (const auto& stage : StagesFromFlag()) param.mutable_state()->add_stage(stage);
  param = WithSyntheticInputs(param, FLAGS_batch, ImageShapeFlag());
  if (!FLAGS_engine.empty()) param = WithEngine(param, FLAGS_engine);
  std::shared_ptr<GpuContext> gpu = GpuFromFlags();
  Net<float> net(param, 1701, gpu);
  // GPU work is asynchronous: a layer's time is only known once its kernels have finished.
  const auto finish = [&gpu] {
#ifdef DOPPIO_WITH_CUDA
    if (gpu) gpu->Synchronize();
#endif
  };

  LOG(INFO) << "Performing Forward";
  float initial_loss;
  net.Forward(&initial_loss);
  LOG(INFO) << "Initial loss: " << initial_loss;
  LOG(INFO) << "Performing Backward";
  net.Backward();
  finish();

  const auto& layers = net.layers();
  const auto& bottoms = net.bottom_vecs();
  const auto& tops = net.top_vecs();
  const auto& need_backward = net.bottom_need_backward();
  std::vector<double> forward_ms(layers.size(), 0.0);
  std::vector<double> backward_ms(layers.size(), 0.0);
  double forward_total = 0, backward_total = 0;
  LOG(INFO) << "*** Benchmark begins ***";
  LOG(INFO) << "Testing for " << FLAGS_iterations << " iterations.";
  Timer total_timer;
  for (int iter = 0; iter < FLAGS_iterations; ++iter) {
    Timer iter_timer;
    Timer timer;
    for (std::size_t i = 0; i < layers.size(); ++i) {
      timer.Start();
      layers[i]->Forward(bottoms[i], tops[i]);
      finish();
      forward_ms[i] += timer.MilliSeconds();
    }
    forward_total += iter_timer.MilliSeconds();
    Timer backward_timer;
    for (int i = static_cast<int>(layers.size()) - 1; i >= 0; --i) {
      if (!net.layer_need_backward()[i]) continue;
      timer.Start();
      layers[i]->Backward(tops[i], need_backward[i], bottoms[i]);
      finish();
      backward_ms[i] += timer.MilliSeconds();
    }
    backward_total += backward_timer.MilliSeconds();
    LOG(INFO) << "Iteration: " << iter + 1
              << " forward-backward time: " << iter_timer.MilliSeconds() << " ms.";
  }
  const double n = FLAGS_iterations;
  LOG(INFO) << "Average time per layer: ";
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const std::string label = net.layer_label(static_cast<int>(i));
    const std::string pad(10 - std::min<size_t>(10, label.size()), ' ');
    LOG(INFO) << pad << label << "\tforward: " << forward_ms[i] / n << " ms.";
    LOG(INFO) << pad << label << "\tbackward: " << backward_ms[i] / n << " ms.";
  }
  LOG(INFO) << "Average Forward pass: " << forward_total / n << " ms.";
  LOG(INFO) << "Average Backward pass: " << backward_total / n << " ms.";
  LOG(INFO) << "Average Forward-Backward: " << total_timer.MilliSeconds() / n << " ms.";
  LOG(INFO) << "Total Time: " << total_timer.MilliSeconds() << " ms.";
  LOG(INFO) << "*** Benchmark ends ***";
  LogMemoryReport({&net}, gpu.get());

  // The same figures as a table on stdout.
  const double all = (forward_total + backward_total) / n;
  std::printf("%-28s %-18s %-7s %12s %12s %7s\n", "layer", "type", "engine", "forward ms",
              "backward ms", "share");
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const double f = forward_ms[i] / n, b = backward_ms[i] / n;
    std::printf("%-28s %-18s %-7s %12.3f %12.3f %6.1f%%\n",
                net.layer_label(static_cast<int>(i)).c_str(), layers[i]->type(),
                layers[i]->engine().c_str(), f, b, all > 0 ? 100.0 * (f + b) / all : 0.0);
  }
  std::printf("%-28s %-18s %-7s %12.3f %12.3f %6.1f%%\n", "total", "", "", forward_total / n,
              backward_total / n, 100.0);
  if (gpu) {
    std::printf("Average Forward-Backward: %.3f ms (%d iterations, %s)\n", all, FLAGS_iterations,
                gpu->Describe().c_str());
  } else {
    std::printf("Average Forward-Backward: %.3f ms (%d iterations, %d threads)\n", all,
                FLAGS_iterations, FLAGS_threads);
  }
  std::printf("%s\n", FormatMemoryReport(MeasureMemory({&net}, nullptr)).c_str());
  if (gpu) std::printf("%s\n", FormatMemoryReport(MeasureMemory({&net}, gpu.get())).c_str());
  return 0;
}

}  // namespace
}  // namespace doppio

DOPPIO_REGISTER_COMMAND(time, "benchmark forward and backward of a net, per layer",
                        doppio::TimeCommand);
