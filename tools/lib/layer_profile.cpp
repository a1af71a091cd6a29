#include "layer_profile.hpp"

#include <glog/logging.h>

#include <cstdio>
#include <sstream>

#include "doppio/util/error.hpp"
#include "doppio/util/timer.hpp"
#include "json_value.hpp"

namespace doppio {

LayerProfile MeasureLayerProfile(Net<float>* net, int iterations,
                                 const std::function<void()>& finish) {
  DOPPIO_ENSURE(iterations > 0) << "--iterations must be positive";
  LOG(INFO) << "Performing Forward";
  float initial_loss;
  net->Forward(&initial_loss);
  LOG(INFO) << "Initial loss: " << initial_loss;
  LOG(INFO) << "Performing Backward";
  net->Backward();
  finish();

  const auto& layers = net->layers();
  const auto& bottoms = net->bottom_vecs();
  const auto& tops = net->top_vecs();
  const auto& need_backward = net->bottom_need_backward();
  LayerProfile profile;
  profile.iterations = iterations;
  profile.layers.resize(layers.size());
  for (std::size_t i = 0; i < layers.size(); ++i) {
    profile.layers[i].name = net->layer_label(static_cast<int>(i));
    profile.layers[i].type = layers[i]->type();
    profile.layers[i].engine = layers[i]->engine();
    profile.layers[i].precision = DescribePrecision(layers[i]->precision());
  }
  // The first layer makes the inputs (a Data layer's stand-in, an Input layer).
  if (!tops.empty() && !tops[0].empty() && tops[0][0]->num_axes() > 0) {
    profile.batch = tops[0][0]->shape(0);
  }
  LOG(INFO) << "*** Benchmark begins ***";
  LOG(INFO) << "Testing for " << iterations << " iterations.";
  Timer total_timer;
  for (int iter = 0; iter < iterations; ++iter) {
    Timer iter_timer;
    Timer timer;
    for (std::size_t i = 0; i < layers.size(); ++i) {
      timer.Start();
      // Through the net, which does part of a layer's work (the input exchange before a fused
      // BatchNorm's Forward: core/input_exchange.hpp).
      net->ForwardFromTo(static_cast<int>(i), static_cast<int>(i));
      finish();
      profile.layers[i].forward_ms += timer.MilliSeconds();
    }
    profile.forward_ms += iter_timer.MilliSeconds();
    Timer backward_timer;
    for (int i = static_cast<int>(layers.size()) - 1; i >= 0; --i) {
      if (!net->layer_need_backward()[i]) continue;
      timer.Start();
      layers[i]->Backward(tops[i], need_backward[i], bottoms[i]);
      finish();
      profile.layers[i].backward_ms += timer.MilliSeconds();
    }
    profile.backward_ms += backward_timer.MilliSeconds();
    LOG(INFO) << "Iteration: " << iter + 1
              << " forward-backward time: " << iter_timer.MilliSeconds() << " ms.";
  }
  profile.total_ms = total_timer.MilliSeconds() / iterations;
  for (auto& layer : profile.layers) {
    layer.forward_ms /= iterations;
    layer.backward_ms /= iterations;
  }
  profile.forward_ms /= iterations;
  profile.backward_ms /= iterations;
  // The update pass, after the timed iterations (it changes the weights).
  Timer update_timer;
  for (int iter = 0; iter < iterations; ++iter) {
    net->Update();
    finish();
  }
  profile.update_ms = update_timer.MilliSeconds() / iterations;
  return profile;
}

LayerProfile EstimateLayerProfile(const Net<float>& net, double tflops) {
  DOPPIO_ENSURE(tflops > 0) << "--tflops must be positive, not " << tflops;
  const double ms_per_operation = 1e3 / (tflops * 1e12);
  LayerProfile profile;
  const auto& layers = net.layers();
  for (std::size_t i = 0; i < layers.size(); ++i) {
    Layer<float>& layer = *layers[i];
    const auto& bottoms = net.bottom_vecs()[i];
    const auto& tops = net.top_vecs()[i];
    LayerTiming timing;
    timing.name = net.layer_label(static_cast<int>(i));
    timing.type = layer.type();
    timing.engine = layer.engine();
    timing.precision = DescribePrecision(layer.precision());
    const std::string type = layer.type();
    double forward = 0, backward = 0;
    const bool weighted =
        (type == "Convolution" || type == "InnerProduct" || type == "Deconvolution") &&
        !layer.blobs().empty() && layer.blobs()[0]->num_axes() > 0 && !bottoms.empty() &&
        !tops.empty();
    if (weighted) {
      const Blob<float>& weights = *layer.blobs()[0];
      // Every output (convolution, inner product) or input (deconvolution) element is a
      // dot product with weights.count() / weights.shape(0) weights.
      const double fan = static_cast<double>(weights.count()) / weights.shape(0);
      const double elements =
          type == "Deconvolution" ? bottoms[0]->count() : static_cast<double>(tops[0]->count());
      const double multiply_adds = elements * fan;
      forward = 2 * multiply_adds;
      if (net.layer_need_backward()[i]) {
        backward = 2 * multiply_adds;
        if (net.bottom_need_backward()[i][0]) backward += 2 * multiply_adds;
      }
    } else {
      for (const Blob<float>* top : tops) forward += top->count();
      if (net.layer_need_backward()[i]) backward = forward;
    }
    timing.forward_ms = forward * ms_per_operation;
    timing.backward_ms = backward * ms_per_operation;
    profile.forward_ms += timing.forward_ms;
    profile.backward_ms += timing.backward_ms;
    profile.layers.push_back(timing);
  }
  profile.total_ms = profile.forward_ms + profile.backward_ms;
  if (!net.top_vecs().empty() && !net.top_vecs()[0].empty() &&
      net.top_vecs()[0][0]->num_axes() > 0) {
    profile.batch = net.top_vecs()[0][0]->shape(0);
  }
  std::ostringstream device;
  device << "estimated from FLOPs at " << tflops << " TFLOPS";
  profile.device = device.str();
  return profile;
}

std::string LayerProfileToJson(const LayerProfile& profile, const std::string& model) {
  std::ostringstream out;
  out.precision(9);
  out << "{\n  \"model\": " << JsonQuote(model) << ",\n  \"device\": " << JsonQuote(profile.device)
      << ",\n  \"batch\": " << profile.batch << ",\n  \"iterations\": " << profile.iterations
      << ",\n  \"forward_ms\": " << profile.forward_ms
      << ",\n  \"backward_ms\": " << profile.backward_ms
      << ",\n  \"total_ms\": " << profile.total_ms << ",\n  \"update_ms\": " << profile.update_ms
      << ",\n  \"layers\": [\n";
  for (std::size_t i = 0; i < profile.layers.size(); ++i) {
    const LayerTiming& layer = profile.layers[i];
    out << "    {\"name\": " << JsonQuote(layer.name) << ", \"type\": " << JsonQuote(layer.type)
        << ", \"engine\": " << JsonQuote(layer.engine)
        << ", \"precision\": " << JsonQuote(layer.precision)
        << ", \"forward_ms\": " << layer.forward_ms << ", \"backward_ms\": " << layer.backward_ms
        << "}" << (i + 1 < profile.layers.size() ? "," : "") << "\n";
  }
  out << "  ]\n}\n";
  return out.str();
}

namespace {

double Number(const JsonValue& object, const std::string& key, const std::string& where) {
  const JsonValue* value = object.Find(key);
  DOPPIO_ENSURE(value && value->kind == JsonValue::Kind::kNumber)
      << where << ": needs a number \"" << key << "\"";
  DOPPIO_ENSURE(value->number >= 0) << where << ": \"" << key << "\" is negative";
  return value->number;
}

std::string Text(const JsonValue& object, const std::string& key, const std::string& where) {
  const JsonValue* value = object.Find(key);
  DOPPIO_ENSURE(value && value->kind == JsonValue::Kind::kString)
      << where << ": needs a string \"" << key << "\"";
  return value->string;
}

}  // namespace

LayerProfile LayerProfileFromJson(const std::string& text, const std::string& source) {
  const JsonValue root = ParseJson(text, source);
  DOPPIO_ENSURE(root.kind == JsonValue::Kind::kObject)
      << source << ": not a `doppio time --json` file (the top level is not an object)";
  LayerProfile profile;
  profile.device = Text(root, "device", source);
  profile.batch = static_cast<int>(Number(root, "batch", source));
  profile.iterations = static_cast<int>(Number(root, "iterations", source));
  profile.forward_ms = Number(root, "forward_ms", source);
  profile.backward_ms = Number(root, "backward_ms", source);
  profile.total_ms = Number(root, "total_ms", source);
  profile.update_ms = Number(root, "update_ms", source);
  const JsonValue* layers = root.Find("layers");
  DOPPIO_ENSURE(layers && layers->kind == JsonValue::Kind::kArray)
      << source << ": needs an array \"layers\"";
  for (std::size_t i = 0; i < layers->array.size(); ++i) {
    const JsonValue& entry = layers->array[i];
    const std::string where = source + ": layers[" + std::to_string(i) + "]";
    DOPPIO_ENSURE(entry.kind == JsonValue::Kind::kObject) << where << " is not an object";
    LayerTiming layer;
    layer.name = Text(entry, "name", where);
    layer.type = Text(entry, "type", where);
    // Where it ran; the files of `doppio time` before engines were named have none.
    if (const JsonValue* engine = entry.Find("engine")) layer.engine = engine->string;
    // And before precisions were.
    if (const JsonValue* precision = entry.Find("precision")) layer.precision = precision->string;
    layer.forward_ms = Number(entry, "forward_ms", where);
    layer.backward_ms = Number(entry, "backward_ms", where);
    profile.layers.push_back(layer);
  }
  return profile;
}

}  // namespace doppio
