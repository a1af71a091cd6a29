#pragma once

#include <glog/logging.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "doppio/core/layer.hpp"

namespace doppio {

// What the rest of Doppio needs to know about a layer type. It is given where the type
// registers, so that no other code keeps lists of layer types: sharding, the data-parallel
// solver and `doppio time` ask LayerTypeTraits, and the registry refuses the unsupported
// types. Registrations chain the setters: LayerTraits().ReadsData().Shardable(ShardDataParam).
struct LayerTraits {
  // Sets which of `size` shards of the records rank `rank` reads, in a layer's parameters.
  using ShardFn = void (*)(LayerParameter* param, int rank, int size);

  // Reads its tops from records (an LMDB, image files): its forward time is waiting for
  // data, and `doppio time` replaces it with constant inputs.
  bool reads_data = false;
  // For a data source that can read one rank's shard of the records; null when every rank
  // would read all of them.
  ShardFn shard = nullptr;
  // Its parameter blobs hold state that each rank keeps for itself and gradient
  // synchronisation does not make equal (BatchNorm's running statistics).
  bool per_rank_state = false;
  // Its parameter blobs scale or shift normalised activations (BatchNorm, Scale, Bias): their
  // norms say little about the step they tolerate, so layer-wise adaptive rates (LARC) leave
  // them alone unless asked.
  bool normalization = false;
  // For a Caffe type that Doppio parses but refuses: the error it gives, after the layer's
  // name, saying why. Empty for a type Doppio runs.
  std::string unsupported;

  LayerTraits& ReadsData() {
    reads_data = true;
    return *this;
  }
  LayerTraits& Shardable(ShardFn fn) {
    shard = fn;
    return *this;
  }
  LayerTraits& PerRankState() {
    per_rank_state = true;
    return *this;
  }
  LayerTraits& Normalization() {
    normalization = true;
    return *this;
  }
  LayerTraits& Unsupported(std::string why) {
    unsupported = std::move(why);
    return *this;
  }
};

// The traits of a layer type; the default ones (a layer that only computes) for a type that
// is not registered. They do not depend on the precision: one registration registers both.
const LayerTraits& LayerTypeTraits(const std::string& type);

// Maps a layer's type string (and engine) to its constructor and its traits. Layers register
// themselves from their own source file with REGISTER_LAYER_CLASS (or
// REGISTER_LAYER_CLASS_WITH_TRAITS); types Doppio refuses register with
// REGISTER_UNSUPPORTED_LAYER. Nothing else lists layer types. An engine other than the default
// (e.g. "CUDNN") may register for the same type and takes over when the layer asks for it or
// when it is the better available choice.
//
// Engine choice (the *_param.engine field): CAFFE is Doppio's own kernels; CUDNN is cuDNN,
// which only runs on a GPU; ONEDNN is oneDNN, which only runs on the CPU. DEFAULT means CUDNN
// for a layer created to run on the GPU and ONEDNN for one created to run on the CPU, when
// registered (ONEDNN: in a build with oneDNN, float) and able to handle the configuration,
// and CAFFE otherwise; `engine: CAFFE` keeps Doppio's kernels. An explicit CUDNN in CPU mode,
// or ONEDNN in GPU mode, gets CAFFE too (the same results; neither library has the other's
// code). An explicit engine the build lacks, or one that cannot run the configuration, is an
// Error with the reason.
template <typename Dtype>
class LayerRegistry {
 public:
  using Creator = std::function<std::shared_ptr<Layer<Dtype>>(const LayerParameter&)>;
  // Returns why an engine cannot run a layer configuration, or "" when it can.
  using Unsupported = std::function<std::string(const LayerParameter&)>;
  // Returns why DEFAULT should leave a configuration the engine can run to another engine
  // (which runs it faster), or "" when DEFAULT may pick it. Never asked for a layer that
  // names the engine: that layer gets it whenever the engine can run it.
  using NotPreferred = std::function<std::string(const LayerParameter&)>;

  static void AddCreator(const std::string& type, const std::string& engine, Creator creator,
                         Unsupported unsupported = nullptr, NotPreferred not_preferred = nullptr);
  // Once per type: with its CAFFE engine, or alone for a type Doppio refuses.
  static void AddTraits(const std::string& type, LayerTraits traits);
  // Creates the layer for `mode`; throws Error naming the layer and the type when the type
  // is unknown or unsupported (with the reason), or when the engine it asks for cannot run it.
  static std::shared_ptr<Layer<Dtype>> CreateLayer(const LayerParameter& param,
                                                   Mode mode = Mode::CPU);
  // The engine CreateLayer picks ("CAFFE", "CUDNN" or "ONEDNN").
  static std::string ChooseEngine(const LayerParameter& param, Mode mode);
  // The types CreateLayer can create (unsupported ones left out).
  static std::vector<std::string> Types();

 private:
  friend const LayerTraits& LayerTypeTraits(const std::string& type);

  struct Entry {
    Creator creator;
    Unsupported unsupported;
    NotPreferred not_preferred;
  };
  struct TypeEntry {
    LayerTraits traits;
    bool has_traits = false;
    std::map<std::string, Entry> engines;
  };
  // type -> its traits and engines. Filled during static initialisation only, read afterwards.
  static std::map<std::string, TypeEntry>& Table();
};

template <typename Dtype>
struct LayerRegisterer {
  LayerRegisterer(const std::string& type, const std::string& engine,
                  typename LayerRegistry<Dtype>::Creator creator,
                  typename LayerRegistry<Dtype>::Unsupported unsupported = nullptr,
                  typename LayerRegistry<Dtype>::NotPreferred not_preferred = nullptr) {
    LayerRegistry<Dtype>::AddCreator(type, engine, std::move(creator), std::move(unsupported),
                                     std::move(not_preferred));
  }
  // The default engine, with the type's traits.
  LayerRegisterer(const std::string& type, typename LayerRegistry<Dtype>::Creator creator,
                  const LayerTraits& traits) {
    LayerRegistry<Dtype>::AddCreator(type, "CAFFE", std::move(creator));
    LayerRegistry<Dtype>::AddTraits(type, traits);
  }
  // A type without engines, which exists to be refused.
  LayerRegisterer(const std::string& type, const LayerTraits& traits) {
    LayerRegistry<Dtype>::AddTraits(type, traits);
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

// Like DOPPIO_REGISTER_LAYER_ENGINE_IF, for an engine that computes in float only: a double
// layer that asks for it gets an Error saying so, and DEFAULT does not choose it.
#define DOPPIO_REGISTER_LAYER_ENGINE_FLOAT_IF(type, engine, klass, unsupported) \
  DOPPIO_REGISTER_LAYER_ENGINE_FLOAT_IF_PREFERRED(type, engine, klass, unsupported, nullptr)

// Like DOPPIO_REGISTER_LAYER_ENGINE_FLOAT_IF, with `not_preferred` (LayerRegistry's
// NotPreferred): where DEFAULT leaves a configuration the engine can run to CAFFE.
#define DOPPIO_REGISTER_LAYER_ENGINE_FLOAT_IF_PREFERRED(type, engine, klass, unsupported, \
                                                        not_preferred)                    \
  static ::doppio::LayerRegisterer<float> g_##klass##_##engine##_f(                       \
      #type, #engine,                                                                     \
      [](const ::doppio::LayerParameter& p) {                                             \
        return std::shared_ptr<::doppio::Layer<float>>(new klass(p));                     \
      },                                                                                  \
      unsupported, not_preferred);                                                        \
  static ::doppio::LayerRegisterer<double> g_##klass##_##engine##_d(                      \
      #type, #engine,                                                                     \
      [](const ::doppio::LayerParameter&) -> std::shared_ptr<::doppio::Layer<double>> {   \
        LOG(FATAL) << "engine " #engine " was chosen for a double " #type " layer";       \
        return nullptr;                                                                   \
      },                                                                                  \
      [](const ::doppio::LayerParameter&) {                                               \
        return std::string("engine " #engine " computes in float only, not double");      \
      })

// REGISTER_LAYER_CLASS(Convolution) registers ConvolutionLayer under type "Convolution".
#define REGISTER_LAYER_CLASS(type) REGISTER_LAYER_CLASS_WITH_TRAITS(type, ::doppio::LayerTraits())

// REGISTER_LAYER_CLASS_WITH_TRAITS(BatchNorm, LayerTraits().PerRankState()) registers
// BatchNormLayer under type "BatchNorm", with what others need to know about it.
#define REGISTER_LAYER_CLASS_WITH_TRAITS(type, traits)                               \
  static ::doppio::LayerRegisterer<float> g_##type##Layer_f(                         \
      #type,                                                                         \
      [](const ::doppio::LayerParameter& p) {                                        \
        return std::shared_ptr<::doppio::Layer<float>>(new type##Layer<float>(p));   \
      },                                                                             \
      traits);                                                                       \
  static ::doppio::LayerRegisterer<double> g_##type##Layer_d(                        \
      #type,                                                                         \
      [](const ::doppio::LayerParameter& p) {                                        \
        return std::shared_ptr<::doppio::Layer<double>>(new type##Layer<double>(p)); \
      },                                                                             \
      traits)

// REGISTER_UNSUPPORTED_LAYER(Python, LayerTraits().Unsupported("...")) makes a net with a
// Python layer fail to build with that reason, rather than as an unknown type.
#define REGISTER_UNSUPPORTED_LAYER(type, traits)                                  \
  static ::doppio::LayerRegisterer<float> g_##type##Unsupported_f(#type, traits); \
  static ::doppio::LayerRegisterer<double> g_##type##Unsupported_d(#type, traits)
