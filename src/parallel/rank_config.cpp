#include "doppio/parallel/rank_config.hpp"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <algorithm>
#include <sstream>

#include "doppio/core/layer_registry.hpp"
#include "doppio/data/shard.hpp"
#include "doppio/solvers/solver_registry.hpp"
#include "doppio/util/hash.hpp"
#include "doppio/util/io.hpp"

namespace doppio {

namespace {

std::string DeterministicBytes(const google::protobuf::Message& message) {
  std::string bytes;
  {
    google::protobuf::io::StringOutputStream stream(&bytes);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    message.SerializeToCodedStream(&coded);
  }
  return bytes;
}

void Note(std::vector<RankNote>* notes, bool warning, const std::ostringstream& text) {
  notes->push_back({warning, text.str()});
}

}  // namespace

SolverParameter ReadSolverNetFiles(const SolverParameter& param) {
  SolverParameter p = param;
  const int train_sources =
      p.has_net() + p.has_net_param() + p.has_train_net() + p.has_train_net_param();
  // With conflicting fields the parameter is left for the solver to refuse.
  if (train_sources != 1) return p;
  auto read = [](const std::string& field, const std::string& path) {
    try {
      return ReadNetParamsFromTextFile(path);
    } catch (const Error& error) {
      throw Error("solver field " + field + ": " + error.what(), error.code());
    }
  };
  if (p.has_net()) {
    *p.mutable_net_param() = read("net", p.net());
    p.clear_net();
  }
  if (p.has_train_net()) {
    *p.mutable_train_net_param() = read("train_net", p.train_net());
    p.clear_train_net();
  }
  for (int i = 0; i < p.test_net_size(); ++i) {
    *p.add_test_net_param() = read("test_net #" + std::to_string(i), p.test_net(i));
  }
  p.clear_test_net();
  return p;
}

RankConfig ConfigureRank(const SolverParameter& param, const RankSetup& setup,
                         std::vector<RankNote>* notes) {
  const int rank = setup.rank;
  const int size = setup.size;
  RankConfig config;
  SolverParameter& p = config.param;
  p = param;
  UpgradeSolverType(&p);

  // Learning rate for the global batch: changed only when asked, and always said.
  if (setup.scale_lr) {
    std::ostringstream text;
    text << "--scale_lr: base_lr " << p.base_lr() << " x " << size
         << " ranks = " << p.base_lr() * size;
    Note(notes, false, text);
    p.set_base_lr(p.base_lr() * size);
  } else if (size > 1 && setup.lr_scaling == LrScaling::kNone) {
    std::ostringstream text;
    text << "base_lr " << p.base_lr() << " is used unchanged for the global batch of " << size
         << " ranks (--scale_lr multiplies it by the number of ranks)";
    Note(notes, false, text);
  }
  if (setup.lr_warmup_iters > 0) {
    p.set_warmup_iter(setup.lr_warmup_iters);
    if (setup.scale_lr) p.set_warmup_start_factor(1.0f / size);
    std::ostringstream text;
    text << "--lr_warmup_iters: the learning rate rises linearly from ";
    if (setup.lr_scaling == LrScaling::kNone) {
      text << p.warmup_start_factor() << " x";
    } else {
      text << "the reference batch's rate";
    }
    text << " to 1 x over the first " << p.warmup_iter() << " iterations";
    Note(notes, false, text);
  }

  // What every rank must agree on: everything but what only rank 0 uses (the weights to
  // load, where snapshots go) and the device (with --gpu=all each rank of a node has its
  // own). The seed is included: per-sample random draws key on it.
  {
    SolverParameter common = p;
    common.clear_weights();
    common.clear_snapshot_prefix();
    common.clear_device_id();
    Hasher net_hash;
    net_hash.Add(DeterministicBytes(common.net_param()));
    net_hash.Add(DeterministicBytes(common.train_net_param()));
    for (const auto& test_net : common.test_net_param()) net_hash.Add(DeterministicBytes(test_net));
    net_hash.Add(common.net()).Add(common.train_net());
    for (const auto& file : common.test_net()) net_hash.Add(file);
    common.clear_net_param();
    common.clear_train_net_param();
    common.clear_test_net_param();
    common.clear_net();
    common.clear_train_net();
    common.clear_test_net();
    Hasher solver_hash;
    solver_hash.Add(DeterministicBytes(common));
    solver_hash.Add(static_cast<int>(!setup.timeline));
    config.net_hash = net_hash.value();
    config.solver_hash = solver_hash.value();
  }

  // Per rank from here on.
  if (size == 1) {
    for (int i = 0; i < p.test_iter_size(); ++i) config.test_iter_total.push_back(p.test_iter(i));
    return config;
  }
  auto shard = [&](NetParameter* net, const std::string& origin) {
    for (const LayerParameter& layer : net->layer()) {
      const LayerTraits& traits = LayerTypeTraits(layer.type());
      if (traits.shard != nullptr) {
        if (std::find(config.sharded_layers.begin(), config.sharded_layers.end(), layer.name()) ==
            config.sharded_layers.end()) {
          config.sharded_layers.push_back(layer.name());
        }
      } else if (traits.reads_data && traits.unsupported.empty()) {
        std::ostringstream text;
        text << origin << ": layer '" << layer.name() << "' (" << layer.type()
             << ") does not shard its data: every rank reads the same records";
        Note(notes, true, text);
      }
    }
    ShardDataLayers(net, rank, size);
  };
  if (p.has_net_param()) shard(p.mutable_net_param(), "net");
  if (p.has_train_net_param()) shard(p.mutable_train_net_param(), "train_net");
  for (int i = 0; i < p.test_net_param_size(); ++i) {
    shard(p.mutable_test_net_param(i), "test_net #" + std::to_string(i));
  }
  // The test set is scored once: the ranks split the test batches among them.
  for (int i = 0; i < p.test_iter_size(); ++i) {
    const int total = p.test_iter(i);
    DOPPIO_ENSURE(total == 0 || total >= size)
        << "solver: test_iter #" << i << " is " << total << ", fewer than the " << size
        << " ranks; the ranks split the test batches among them, and each needs one";
    config.test_iter_total.push_back(total);
    p.set_test_iter(i, total / size + (rank < total % size ? 1 : 0));
  }
  if (rank > 0) {
    p.clear_weights();
    p.set_snapshot(0);
    p.set_snapshot_after_train(false);
  }
  return config;
}

}  // namespace doppio
