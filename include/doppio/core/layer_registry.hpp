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
template <typename Dtype>
class LayerRegistry {
 public:
  using Creator = std::function<std::shared_ptr<Layer<Dtype>>(const LayerParameter&)>;

  static void AddCreator(const std::string& type, const std::string& engine, Creator creator);
  // Creates the layer; throws Error naming the layer and the type when the type is unknown.
  static std::shared_ptr<Layer<Dtype>> CreateLayer(const LayerParameter& param);
  static bool Has(const std::string& type);
  static std::vector<std::string> Types();

 private:
  // type -> engine -> creator. Filled during static initialisation only, read afterwards.
  static std::map<std::string, std::map<std::string, Creator>>& Table();
};

template <typename Dtype>
struct LayerRegisterer {
  LayerRegisterer(const std::string& type, const std::string& engine,
                  typename LayerRegistry<Dtype>::Creator creator) {
    LayerRegistry<Dtype>::AddCreator(type, engine, std::move(creator));
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

// REGISTER_LAYER_CLASS(Convolution) registers ConvolutionLayer under type "Convolution".
#define REGISTER_LAYER_CLASS(type) DOPPIO_REGISTER_LAYER_ENGINE(type, CAFFE, type##Layer)
