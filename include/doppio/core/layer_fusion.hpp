#pragma once

#include <cstdint>
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

// The graph questions every pass asks. The first layer after `layer_id` that reads `blob`, or
// -1.
template <typename Dtype>
int FirstReader(const Net<Dtype>& net, int layer_id, const Blob<Dtype>* blob);
// Whether layer `layer_id` runs in place on `blob` alone (one bottom, one top, both `blob`).
template <typename Dtype>
bool InPlaceOn(const Net<Dtype>& net, int layer_id, const Blob<Dtype>* blob);

// A layer that computes, inside its own Forward (and Backward), what one or more later layers,
// its guests, would compute; the guests' own calls then do nothing. It counts its Forwards, so
// that a guest can tell whether its host ran before it.
class FusionHost {
 public:
  virtual ~FusionHost() = default;
  std::uint64_t forwards() const { return forwards_; }

 protected:
  void CountForward() { ++forwards_; }

 private:
  std::uint64_t forwards_ = 0;
};

// A layer whose Forward its host computes. Net::ForwardFromTo starting at a guest (or between
// its host and it) would leave its top as the host last wrote it, not as the guest would have
// computed it from what its bottom holds now: the guest's Forward refuses that (CheckHostRan).
class FusionGuest {
 public:
  virtual ~FusionGuest() = default;
  void FuseInto(const FusionHost& host, const std::string& host_name) {
    host_ = &host;
    host_name_ = host_name;
    seen_forwards_ = host.forwards();
  }
  bool fused() const { return host_ != nullptr; }

 protected:
  // Throws Error naming `guest` (the layer's Describe()) and its host unless the host ran its
  // Forward since this guest's last one.
  void CheckHostRan(const std::string& guest);
  const FusionHost& host() const { return *host_; }

 private:
  const FusionHost* host_ = nullptr;
  std::string host_name_;
  std::uint64_t seen_forwards_ = 0;
};

template <typename Dtype>
struct LayerFusionRegisterer {
  LayerFusionRegisterer(const std::string& engine,
                        std::vector<typename LayerFusions<Dtype>::Pass> passes) {
    LayerFusions<Dtype>::Register(engine, std::move(passes));
  }
};

}  // namespace doppio
