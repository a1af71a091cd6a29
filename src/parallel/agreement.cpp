#include "doppio/parallel/agreement.hpp"

#include <glog/logging.h>

#include <iomanip>
#include <sstream>

#include "doppio/core/layer_registry.hpp"
#include "doppio/util/hash.hpp"

namespace doppio {

std::vector<int> RanksDifferingFromRankZero(const std::vector<std::uint64_t>& all, int stride,
                                            int field) {
  std::vector<int> differ;
  const int ranks = static_cast<int>(all.size()) / stride;
  for (int r = 1; r < ranks; ++r) {
    if (all[stride * r + field] != all[field]) differ.push_back(r);
  }
  return differ;
}

std::string RankList(const std::vector<int>& ranks) {
  std::ostringstream text;
  text << (ranks.size() == 1 ? "rank " : "ranks ");
  for (std::size_t i = 0; i < ranks.size(); ++i) text << (i ? ", " : "") << ranks[i];
  return text.str();
}

std::string Hex(std::uint64_t value) {
  std::ostringstream text;
  text << std::hex << std::setw(16) << std::setfill('0') << value;
  return text.str();
}

void AgreeOnFailure(Communicator& comm, bool ok, const std::string& message,
                    const std::string& what, ExitCode code) {
  if (comm.size() == 1) {
    if (!ok) throw AgreedError(message, code);
    return;
  }
  // Each rank's exit code, 0 where it succeeded.
  const std::vector<std::int32_t> codes =
      comm.AllgatherValue<std::int32_t>(ok ? 0 : static_cast<std::int32_t>(code), "failure check");
  std::vector<int> failed;
  for (int r = 0; r < comm.size(); ++r) {
    if (codes[r] != 0) failed.push_back(r);
  }
  if (failed.empty()) return;
  // Every rank reports the first failed rank's own message.
  std::string first_message = message;
  comm.BroadcastBytes(&first_message, failed[0], "failure message");
  std::ostringstream text;
  text << "rank " << failed[0] << " could not " << what << ": " << first_message;
  if (failed.size() > 1) {
    std::vector<int> others(failed.begin() + 1, failed.end());
    text << " (" << RankList(others) << " failed too)";
  }
  throw AgreedError(text.str(), static_cast<ExitCode>(codes[failed[0]]));
}

void CheckStartUpAgreement(Communicator& comm, std::uint64_t net_hash, std::uint64_t solver_hash,
                           std::uint64_t layout_hash) {
  constexpr int kFields = 3;
  std::uint64_t mine[kFields] = {net_hash, solver_hash, layout_hash};
  std::vector<std::uint64_t> all(kFields * comm.size());
  comm.Allgather(mine, all.data(), kFields, CommType::kUInt64, "start-up agreement");
  const char* what[kFields] = {"nets (the training and test net definitions)",
                               "solver settings (or timeline flag)",
                               "gradient bucket layout (--sync, --bucket_mb, parameter shapes)"};
  std::ostringstream problems;
  bool any = false;
  for (int k = 0; k < kFields; ++k) {
    const std::vector<int> differ = RanksDifferingFromRankZero(all, kFields, k);
    if (differ.empty()) continue;
    problems << (any ? "; " : "") << RankList(differ) << (differ.size() == 1 ? " has" : " have")
             << " different " << what[k] << " from rank 0 (hash "
             << Hex(all[kFields * differ[0] + k]) << " vs " << Hex(all[k]) << ")";
    any = true;
  }
  if (any) {
    throw AgreedError("the ranks disagree before training: " + problems.str() +
                      ". Every rank must run the same solver and net files with the same "
                      "--sync and --bucket_mb; refusing to train");
  }
}

template <typename Dtype>
std::uint64_t WeightsChecksum(const Solver<Dtype>& solver) {
  Hasher hash;
  auto add = [&](const Net<Dtype>& net) {
    if (net.arena_count() > 0) hash.AddBytes(net.arena_data(), net.arena_count() * sizeof(Dtype));
  };
  add(*solver.net());
  for (const auto& test_net : solver.test_nets()) add(*test_net);
  return hash.value();
}

template <typename Dtype>
void BroadcastWeights(Communicator& comm, Solver<Dtype>* solver, const std::string& why) {
  if (comm.size() == 1) return;
  auto broadcast = [&](Net<Dtype>* net, const std::string& which) {
    if (net->arena_count() == 0) return;
    comm.Broadcast(net->mutable_arena_data(), net->arena_count(), CommTypeOf<Dtype>(), 0,
                   "broadcast " + which + " weights");
  };
  broadcast(solver->net().get(), "training net");
  for (std::size_t i = 0; i < solver->test_nets().size(); ++i) {
    broadcast(solver->test_nets()[i].get(), "test net #" + std::to_string(i));
  }
  const std::vector<std::uint64_t> sums = comm.AllgatherValue(WeightsChecksum(*solver), "checksum");
  const std::vector<int> differ = RanksDifferingFromRankZero(sums);
  if (!differ.empty()) {
    throw AgreedError("after broadcasting " + why + ", the weights of " + RankList(differ) +
                      " differ from rank 0's (checksum " + Hex(sums[differ[0]]) + " vs " +
                      Hex(sums[0]) + ")");
  }
  LOG(INFO) << "Broadcast " << why << " to " << comm.size()
            << " ranks; every rank's weights checksum is " << Hex(sums[0]);
}

template <typename Dtype>
void CheckLearnedWeightsAgree(Communicator& comm, const Net<Dtype>& net) {
  // Per-rank state such as BatchNorm's running statistics is each rank's own, as in Caffe's
  // multi-GPU training; snapshots hold rank 0's.
  Hasher hash;
  for (std::size_t i = 0; i < net.learnable_params().size(); ++i) {
    const int layer = net.learnable_param_last_layer()[i];
    if (net.params_lr()[i] == 0.f || LayerTypeTraits(net.layers()[layer]->type()).per_rank_state) {
      continue;
    }
    hash.AddBytes(net.arena_data() + net.learnable_param_offsets()[i],
                  net.learnable_params()[i]->count() * sizeof(Dtype));
  }
  const std::vector<std::uint64_t> sums = comm.AllgatherValue(hash.value(), "final checksum");
  const std::vector<int> differ = RanksDifferingFromRankZero(sums);
  if (!differ.empty()) {
    LOG(WARNING) << "after training, the learned weights of " << RankList(differ)
                 << " differ from rank 0's (checksum); the snapshots hold rank 0's";
  }
}

SolverAction ActionAgreement::Agree(Communicator& comm, SolverAction local,
                                    const Divergence* diverged) {
  if (!in_iteration_) {
    deferred_ = CombineActions(deferred_, local);
    return SolverAction::NONE;
  }
  in_iteration_ = false;
  local = CombineActions(deferred_, local);
  deferred_ = SolverAction::NONE;
  const int size = comm.size();
  if (size == 1) {
    if (diverged) throw AgreedError(diverged->message, ExitCode::kDiverged);
    snapshot_agreed_ = Snapshots(local);
    return local;
  }
  // One elementwise maximum carries every decision: whether some rank stops, whether some
  // rank asked for a snapshot, and the rank reporting a divergence, ranked so that the largest
  // value is the lowest rank that saw it in a forward output, else the lowest that saw it at
  // all (1..2 * size; 0: none).
  std::int32_t reporter = 0;
  if (diverged) reporter = (diverged->in_forward ? size : 0) + size - comm.rank();
  std::int32_t codes[3] = {reporter, Stops(local) ? 1 : 0, Snapshots(local) ? 1 : 0};
  comm.Allreduce(codes, 3, CommType::kInt32, ReduceOp::kMax, "agree on stop/snapshot");
  reporter = codes[0];
  if (reporter > 0) {
    const int rank = size - 1 - (reporter - 1) % size;
    std::string message = diverged ? diverged->message : std::string();
    comm.BroadcastBytes(&message, rank, "divergence message");
    throw AgreedError("rank " + std::to_string(rank) + ": " + message, ExitCode::kDiverged);
  }
  snapshot_agreed_ = codes[2] != 0;
  return MakeAction(codes[1] != 0, snapshot_agreed_ && comm.rank() == 0);
}

template std::uint64_t WeightsChecksum(const Solver<float>&);
template std::uint64_t WeightsChecksum(const Solver<double>&);
template void BroadcastWeights(Communicator&, Solver<float>*, const std::string&);
template void BroadcastWeights(Communicator&, Solver<double>*, const std::string&);
template void CheckLearnedWeightsAgree(Communicator&, const Net<float>&);
template void CheckLearnedWeightsAgree(Communicator&, const Net<double>&);

}  // namespace doppio
