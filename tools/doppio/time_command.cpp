// `doppio time`: forward and backward timing of a net, per layer, like `caffe time`.
#include <gflags/gflags.h>
#include <glog/logging.h>

#include <algorithm>
#include <cstdio>
#include <set>

#include "command.hpp"
#include "common_flags.hpp"
#include "doppio/core/net.hpp"
#include "doppio/util/io.hpp"
#include "doppio/util/math_functions.hpp"
#include "doppio/util/timer.hpp"

DEFINE_int32(threads, 1, "time: CPU threads for the BLAS kernels.");
DEFINE_int32(batch, 0, "time: override the batch size of the net's inputs (0 keeps it).");
DEFINE_string(input_shape, "",
              "time: C,H,W of the images a data layer would produce, when it cannot be "
              "inferred (from transform_param.crop_size: 3 channels of crop x crop).");

namespace doppio {
namespace {

const std::set<std::string>& DataLayerTypes() {
  static const std::set<std::string> types = {"Data", "ImageData", "HDF5Data", "WindowData",
                                              "MemoryData"};
  return types;
}

std::vector<int> ImageShape(const LayerParameter& layer) {
  if (!FLAGS_input_shape.empty()) {
    std::vector<int> shape;
    for (const auto& part : SplitCommaList(FLAGS_input_shape)) shape.push_back(std::stoi(part));
    DOPPIO_ENSURE(shape.size() == 3)
        << "--input_shape needs C,H,W, got '" << FLAGS_input_shape << "'";
    return shape;
  }
  const int crop = layer.transform_param().crop_size();
  DOPPIO_ENSURE(crop > 0) << "layer '" << layer.name() << "' (" << layer.type()
                          << "): cannot tell the image size it produces; pass --input_shape=C,H,W";
  return {3, crop, crop};
}

int BatchSize(const LayerParameter& layer) {
  if (FLAGS_batch > 0) return FLAGS_batch;
  if (layer.has_data_param()) return layer.data_param().batch_size();
  if (layer.has_image_data_param()) return layer.image_data_param().batch_size();
  if (layer.has_hdf5_data_param()) return layer.hdf5_data_param().batch_size();
  return 1;
}

// Data layers read files that timing does not need: they become constant DummyData of the
// same shape (images, then labels).
NetParameter WithSyntheticInputs(const NetParameter& param) {
  NetParameter result = param;
  for (auto& layer : *result.mutable_layer()) {
    if (DataLayerTypes().count(layer.type())) {
      const int batch = BatchSize(layer);
      const std::vector<int> image = ImageShape(layer);
      LayerParameter dummy;
      dummy.set_name(layer.name());
      dummy.set_type("DummyData");
      *dummy.mutable_top() = layer.top();
      *dummy.mutable_include() = layer.include();
      *dummy.mutable_exclude() = layer.exclude();
      for (int t = 0; t < layer.top_size(); ++t) {
        BlobShape* shape = dummy.mutable_dummy_data_param()->add_shape();
        shape->add_dim(batch);
        if (t == 0) {
          for (int d : image) shape->add_dim(d);
        }
        FillerParameter* filler = dummy.mutable_dummy_data_param()->add_data_filler();
        filler->set_type("constant");
        filler->set_value(t == 0 ? 0.5f : 0.f);
      }
      layer = dummy;
    } else if (layer.type() == "Input" && FLAGS_batch > 0) {
      for (auto& shape : *layer.mutable_input_param()->mutable_shape()) {
        if (shape.dim_size() > 0) shape.set_dim(0, FLAGS_batch);
      }
    }
  }
  return result;
}

int TimeCommand() {
  DOPPIO_ENSURE(!FLAGS_model.empty()) << "doppio time needs --model=FILE";
  DOPPIO_ENSURE(FLAGS_iterations > 0) << "--iterations must be positive";
  DOPPIO_ENSURE(FLAGS_threads > 0) << "--threads must be positive";
  SetBlasThreads(FLAGS_threads);
  NetParameter param = ReadNetParamsFromTextFile(FLAGS_model);
  param.mutable_state()->set_phase(PhaseFromFlag(TRAIN));
  param.mutable_state()->set_level(FLAGS_level);
  for (const auto& stage : StagesFromFlag()) param.mutable_state()->add_stage(stage);
  param = WithSyntheticInputs(param);
  Net<float> net(param);

  LOG(INFO) << "Performing Forward";
  float initial_loss;
  net.Forward(&initial_loss);
  LOG(INFO) << "Initial loss: " << initial_loss;
  LOG(INFO) << "Performing Backward";
  net.Backward();

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
      forward_ms[i] += timer.MilliSeconds();
    }
    forward_total += iter_timer.MilliSeconds();
    Timer backward_timer;
    for (int i = static_cast<int>(layers.size()) - 1; i >= 0; --i) {
      if (!net.layer_need_backward()[i]) continue;
      timer.Start();
      layers[i]->Backward(tops[i], need_backward[i], bottoms[i]);
      backward_ms[i] += timer.MilliSeconds();
    }
    backward_total += backward_timer.MilliSeconds();
    LOG(INFO) << "Iteration: " << iter + 1
              << " forward-backward time: " << iter_timer.MilliSeconds() << " ms.";
  }
  const double n = FLAGS_iterations;
  LOG(INFO) << "Average time per layer: ";
  for (std::size_t i = 0; i < layers.size(); ++i) {
    LOG(INFO) << std::string(10 - std::min<size_t>(10, net.layer_names()[i].size()), ' ')
              << net.layer_names()[i] << "\tforward: " << forward_ms[i] / n << " ms.";
    LOG(INFO) << std::string(10 - std::min<size_t>(10, net.layer_names()[i].size()), ' ')
              << net.layer_names()[i] << "\tbackward: " << backward_ms[i] / n << " ms.";
  }
  LOG(INFO) << "Average Forward pass: " << forward_total / n << " ms.";
  LOG(INFO) << "Average Backward pass: " << backward_total / n << " ms.";
  LOG(INFO) << "Average Forward-Backward: " << total_timer.MilliSeconds() / n << " ms.";
  LOG(INFO) << "Total Time: " << total_timer.MilliSeconds() << " ms.";
  LOG(INFO) << "*** Benchmark ends ***";

  // The same figures as a table on stdout.
  const double all = (forward_total + backward_total) / n;
  std::printf("%-28s %-18s %12s %12s %7s\n", "layer", "type", "forward ms", "backward ms", "share");
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const double f = forward_ms[i] / n, b = backward_ms[i] / n;
    std::printf("%-28s %-18s %12.3f %12.3f %6.1f%%\n", net.layer_names()[i].c_str(),
                layers[i]->type(), f, b, all > 0 ? 100.0 * (f + b) / all : 0.0);
  }
  std::printf("%-28s %-18s %12.3f %12.3f %6.1f%%\n", "total", "", forward_total / n,
              backward_total / n, 100.0);
  std::printf("Average Forward-Backward: %.3f ms (%d iterations, %d threads)\n", all,
              FLAGS_iterations, FLAGS_threads);
  return 0;
}

}  // namespace
}  // namespace doppio

DOPPIO_REGISTER_COMMAND(time, "benchmark forward and backward of a net, per layer",
                        doppio::TimeCommand);
