#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "doppio/parallel/communicator.hpp"
#include "doppio/solvers/solver.hpp"

namespace doppio {

// An Error that every rank of the job raised at the same point (a refused start-up, an
// unreadable snapshot): the job can end normally, no rank being left in a collective.
class AgreedError : public Error {
 public:
  explicit AgreedError(const std::string& what, ExitCode code = ExitCode::kUserError)
      : Error(what, code) {}
};

// Collective: when `ok` is false on some rank, every rank throws AgreedError with the
// first failed rank's `message` ("rank 2 could not <what>: <message>") and exit `code`.
// With one rank the message is thrown as it is.
void AgreeOnFailure(Communicator& comm, bool ok, const std::string& message,
                    const std::string& what, ExitCode code = ExitCode::kUserError);

// The ranks whose value differs from rank 0's, given every rank's `stride` values in rank
// order (an Allgather's result): value `field` of each rank is compared.
std::vector<int> RanksDifferingFromRankZero(const std::vector<std::uint64_t>& all, int stride = 1,
                                            int field = 0);
// "rank 3" or "ranks 1, 3".
std::string RankList(const std::vector<int>& ranks);
// Sixteen hexadecimal digits.
std::string Hex(std::uint64_t value);

// Collective: throws AgreedError naming the ranks whose nets, solver settings or gradient
// bucket layout differ from rank 0's.
void CheckStartUpAgreement(Communicator& comm, std::uint64_t net_hash, std::uint64_t solver_hash,
                           std::uint64_t layout_hash);

// Hash of the solver's training net's weights (and its test nets').
template <typename Dtype>
std::uint64_t WeightsChecksum(const Solver<Dtype>& solver);

// Collective: broadcasts rank 0's weights to every rank and checks the checksums agree
// (AgreedError naming the ranks that differ).
template <typename Dtype>
void BroadcastWeights(Communicator& comm, Solver<Dtype>* solver, const std::string& why);

// Collective: warns when the learned weights (those with a learning rate, outside layers
// with per-rank state) of some rank differ from rank 0's after training.
template <typename Dtype>
void CheckLearnedWeightsAgree(Communicator& comm, const Net<Dtype>& net);

// The ranks act on their requests together, at the end of an iteration: a stop anywhere
// stops every rank at the same iteration, and a snapshot asked for anywhere is written by
// rank 0, before stopping too when a stop meets it (CombineActions: STOP never loses to a
// SNAPSHOT, nor a SNAPSHOT to a STOP). Polled between test batches, whose number differs
// between ranks, a request is kept for the end of the next iteration: no collective there.
// The same exchange decides whether training diverged: a NaN or infinity that one rank saw
// (its own loss, say) stops every rank together.
class ActionAgreement {
 public:
  // An iteration ended: the next Agree is at the same point on every rank.
  void EndIteration() { in_iteration_ = true; }
  // Whether the next Agree is the collective one at the end of an iteration.
  bool in_iteration() const { return in_iteration_; }
  // Collective after EndIteration, local otherwise. `diverged`: this rank's NaN or infinity in
  // the iteration that ended (null: none). When some rank has one, every rank throws
  // AgreedError(kDiverged) with the same message: that of the lowest rank that found it in a
  // forward output, else of the lowest rank that found it at all.
  // The action for this rank: its snapshot part only on rank 0.
  SolverAction Agree(Communicator& comm, SolverAction local, const Divergence* diverged = nullptr);
  // Whether the last end-of-iteration Agree has rank 0 snapshot: the same on every rank, so
  // that they can all prepare for it together.
  bool snapshot_agreed() const { return snapshot_agreed_; }

 private:
  SolverAction deferred_ = SolverAction::NONE;
  bool in_iteration_ = false;
  bool snapshot_agreed_ = false;
};

}  // namespace doppio
