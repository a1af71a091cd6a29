#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "doppio/parallel/lr_scaling.hpp"
#include "doppio/proto/doppio.pb.h"

namespace doppio {

// What a rank's parameter depends on besides the solver parameter itself.
struct RankSetup {
  int rank = 0;
  int size = 1;
  // base_lr times the number of ranks.
  bool scale_lr = false;
  // Applied by the trainer once the net's batch is known; here only so that the notes do not
  // call base_lr unchanged.
  LrScaling lr_scaling = LrScaling::kNone;
  // > 0: linear learning-rate warm-up over this many iterations.
  int lr_warmup_iters = 0;
  // Whether the job records a timeline: part of what the ranks must agree on.
  bool timeline = false;
};

// A line for the log, said by the caller (the configuration itself has no side effects).
struct RankNote {
  bool warning = false;
  std::string text;
};

struct RankConfig {
  // The parameter this rank builds its solver from.
  SolverParameter param;
  // What every rank must have alike: the nets, and the rest of the solver settings (with
  // the timeline flag). Seeds, weights, snapshot prefix and device are left out.
  std::uint64_t net_hash = 0;
  std::uint64_t solver_hash = 0;
  // Layers that read their own shard of the data on each rank, in net order.
  std::vector<std::string> sharded_layers;
  // Each test net's test_iter before the ranks split it.
  std::vector<int> test_iter_total;
};

// A copy of `param` with its net files (net, train_net, test_net) read in as net_param,
// train_net_param and test_net_param, so that the ranks compare and shard what they will
// build. Left as it is when it names no training net or several (the solver refuses that).
// Reads files; throws Error naming the solver field for an unreadable one.
SolverParameter ReadSolverNetFiles(const SolverParameter& param);

// This rank's parameter, from `param` as every rank has it: the solver type upgraded, the
// learning rate scaled or warmed up when asked; with several ranks, every Data and
// ImageData layer reads shard `rank` of `size`, test_iter is split among the ranks, each
// rank but 0 has no weights to load and no snapshots. Every rank keeps the seed: crops,
// mirrors and dropout masks are keyed by the sample, not the rank, and must agree. Net files are
// not read (see ReadSolverNetFiles). A pure function: the lines to log go to `notes`, in
// order, also when it throws Error (a test_iter smaller than the number of ranks).
RankConfig ConfigureRank(const SolverParameter& param, const RankSetup& setup,
                         std::vector<RankNote>* notes);

}  // namespace doppio
