#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "doppio/core/layer.hpp"

namespace doppio {

// Maps a layer's type string (and engine) to its constructor. Layers register themselves
// from their own source file with REGISTER_LAYER_CLASS; nothing else lists layer types.
// An engine other than the default (e.g. "CUDNN") may register for the same type and takes
// over when the layer asks for it or when it is the better available choice.
//
// Engine choice (the *_param.engine field): CAFFE is Doppio's own kernels; CUDNN is cuDNN,
// which only runs on a GPU. DEFAULT means CUDNN for a layer created to run on the GPU, when
// registered and able to handle the configuration, and CAFFE otherwise (CPU mode included).
// An explicit CUDNN in CPU mode gets CAFFE too (the same results; cuDNN has no CPU code).
template <typename Dtype>
class LayerRegistry {
 public:
  using Creator = std::function<std::shared_ptr<Layer<Dtype>>(const LayerParameter&)>;
  // Returns why an engine cannot run a layer configuration, or "" when it can.
  using Unsupported = std::function<std::string(const LayerParameter&)>;

  static void AddCreator(const std::string& type, const std::string& engine, Creator creator,
                         Unsupported unsupported = nullptr);
  // Creates the layer for `mode`; throws Error naming the layer and the type when the type
  // is unknown, or when the engine it asks for cannot run it.
  static std::shared_ptr<Layer<Dtype>> CreateLayer(const LayerParameter& param,
                                                   Mode mode = Mode::CPU);
  // The engine CreateLayer picks ("CAFFE" or "CUDNN").
  static std::string ChooseEngine(const LayerParameter& param, Mode mode);
  static bool Has(const std::string& type);
  static std::vector<std::string> Types();

 private:
  struct Entry {
    Creator creator;
    Unsupported unsupported;
  };
  // type -> engine -> entry. Filled during static initialisation only, read afterwards.
  static std::map<std::string, std::map<std::string, Entry>>& Table();
};

template <typename Dtype>
struct LayerRegisterer {
  LayerRegisterer(const std::string& type, const std::string& engine,
                  typename LayerRegistry<Dtype>::Creator creator,
                  typename LayerRegistry<Dtype>::Unsupported unsupported = nullptr) {
    LayerRegistry<Dtype>::AddCreator(type, engine, std::move(creator), std::move(unsupported));
  }
};

}  // namespace doppio

#define DOPPIO_REGISTER_LAYER_ENGINE(type, engine, klass)                      \
  static ::doppio::LayerRegisterer<float> g_##klass##_##engine##_f(            \
      #type, #engine, [](const ::doppio::LayerParameter& p) {                  \
        return std::shared_ptr<::doppio::Layer<float>>(new klass<float>(p));   \
      });                                                                      \
  static ::doppio::LayerRegisterer<double> g_##klass##_##engine##_d(           \
      #type, #engine, [](const ::doppio::LayerParameter& p) {                  \
        return std::shared_ptr<::doppio::Layer<double>>(new klass<double>(p)); \
      })

// Like DOPPIO_REGISTER_LAYER_ENGINE, for an engine that handles only some configurations:
// `unsupported` is a function (const LayerParameter&) -> std::string giving the reason it
// cannot run one, or "" when it can.
#define DOPPIO_REGISTER_LAYER_ENGINE_IF(type, engine, klass, unsupported)      \
  static ::doppio::LayerRegisterer<float> g_##klass##_##engine##_f(            \
      #type, #engine,                                                          \
      [](const ::doppio::LayerParameter& p) {                                  \
        return std::shared_ptr<::doppio::Layer<float>>(new klass<float>(p));   \
      },                                                                       \
      unsupported);                                                            \
  static ::doppio::LayerRegisterer<double> g_##klass##_##engine##_d(           \
      #type, #engine,                                                          \
      [](const ::doppio::LayerParameter& p) {                                  \
        return std::shared_ptr<::doppio::Layer<double>>(new klass<double>(p)); \
      },                                                                       \
      unsupported)

// REGISTER_LAYER_CLASS(Convolution) registers ConvolutionLayer under type "Convolution".
#define REGISTER_LAYER_CLASS(type) DOPPIO_REGISTER_LAYER_ENGINE(type, CAFFE, type##Layer)
