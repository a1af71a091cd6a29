#pragma once

#include <string>
#include <vector>

#include "doppio/core/net.hpp"

namespace doppio {

// Passes that fuse layers of a net once every layer is set up, registered by an engine whose
// library computes two layers in one call (oneDNN's post-ops: src/layers/onednn_fusion.cpp).
// The core cannot name the engines' layer classes, so they register here, as layers do in
// the LayerRegistry. Net::Init runs the passes after the layers' SetUp, before it logs the
// engines. A pass changes what the layers compute, never the blobs or parameters the net
// holds (a layer that keeps its input by exchange asks the net to do it:
// core/input_exchange.hpp), and leaves every result that a later layer, a loss or the user
// reads as it was.
//
// An engine registers its passes once, as one list in the order they must run: a pass may
// build on what an earlier one of its list fused. The lists of different engines fuse
// different layers, and run in the order they were registered.
template <typename Dtype>
class LayerFusions {
 public:
  struct Pass {
    const char* name;  // for tests and messages
    void (*run)(const Net<Dtype>& net);
  };

  // Registers `engine`'s passes; a second list for the same engine is a programming error.
  static void Register(const std::string& engine, std::vector<Pass> passes);
  // The names of `engine`'s passes in the order they run (empty where it registered none).
  static std::vector<std::string> PassNames(const std::string& engine);
  static void Run(const Net<Dtype>& net);

 private:
  struct EngineList {
    std::string engine;
    std::vector<Pass> passes;
  };
  static std::vector<EngineList>& Lists();
};

template <typename Dtype>
struct LayerFusionRegisterer {
  LayerFusionRegisterer(const std::string& engine,
                        std::vector<typename LayerFusions<Dtype>::Pass> passes) {
    LayerFusions<Dtype>::Register(engine, std::move(passes));
  }
};

}  // namespace doppio
