#pragma once

#include <vector>

#include "doppio/core/net.hpp"

namespace doppio {

// Passes that fuse layers of a net once every layer is set up, registered by an engine whose
// library computes two layers in one call (oneDNN's post-ops: src/layers/onednn_fusion.cpp).
// The core cannot name the engines' layer classes, so they register here, as layers do in
// the LayerRegistry. Net::Init runs the passes after the layers' SetUp, before it logs the
// engines. A pass changes what the layers compute, never the blobs or parameters the net
// holds, and leaves every result that a later layer, a loss or the user reads as it was.
template <typename Dtype>
class LayerFusions {
 public:
  using Pass = void (*)(const Net<Dtype>& net);

  static void Add(Pass pass);
  static void Run(const Net<Dtype>& net);

 private:
  static std::vector<Pass>& Passes();
};

template <typename Dtype>
struct LayerFusionRegisterer {
  explicit LayerFusionRegisterer(typename LayerFusions<Dtype>::Pass pass) {
    LayerFusions<Dtype>::Add(pass);
  }
};

}  // namespace doppio
