#include "doppio/parallel/scaling_model.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "doppio/parallel/mpi_communicator.hpp"

namespace doppio {

CollectiveLibrary ParseCollectiveLibrary(const std::string& name) {
  if (name == "mpi") return CollectiveLibrary::kOpenMpi;
  if (name == "nccl") return CollectiveLibrary::kNccl;
  DOPPIO_FAIL() << "--collectives must be mpi or nccl, not '" << name << "'";
  return CollectiveLibrary::kOpenMpi;
}

const char* CollectiveLibraryName(CollectiveLibrary library) {
  return library == CollectiveLibrary::kNccl ? "nccl" : "mpi";
}

namespace {

// libnbc's chain reduce moves 8 KB fragments (nbc_ireduce.c: segsize 16384 / 2).
constexpr double kChainFragmentBytes = 8192;
// Below this many bytes libnbc reduces with a binomial tree even on few ranks.
constexpr double kChainMinBytes = 65536;

int CeilLog2(int ranks) {
  int rounds = 0;
  while ((1 << rounds) < ranks) ++rounds;
  return rounds;
}

// libnbc's binomial reduce to rank 0: in round r a rank whose index is a multiple of 2^r
// receives its partner's partial sum (index + 2^(r-1)) and adds it; the others send and
// leave. When rank 0 has the whole sum.
double BinomialReduce(double bytes, int ranks, const LinkCost& link) {
  const double step = link.alpha + bytes * (link.beta + link.gamma);
  const int rounds = CeilLog2(ranks);
  std::vector<double> done(ranks, 0.0);
  // A rank's partners have higher indices: they are done before it.
  for (int rank = ranks - 1; rank >= 0; --rank) {
    double time = 0;
    for (int r = 1; r <= rounds && rank % (1 << r) == 0; ++r) {
      const int partner = rank + (1 << (r - 1));
      if (partner < ranks) time = std::max(time, done[partner]) + step;
    }
    done[rank] = time;
  }
  return done[0];
}

// libnbc's binomial broadcast from rank 0: a rank that has the data sends it to all its
// children at once (rank + 2^r for every r with rank < 2^r), so they share its link. When
// the last rank has it.
double BinomialBroadcast(double bytes, int ranks, const LinkCost& link) {
  const int rounds = CeilLog2(ranks);
  std::vector<double> has(ranks, 0.0);
  double last = 0;
  // A rank's parent has a lower index: it has the data before it.
  for (int rank = 0; rank < ranks; ++rank) {
    std::vector<int> children;
    for (int r = 0; r < rounds; ++r) {
      const int child = rank + (1 << r);
      if (child < ranks && (rank < (1 << r) || rank == 0)) children.push_back(child);
    }
    const double end = has[rank] + link.alpha + children.size() * bytes * link.beta;
    for (int child : children) has[child] = end;
    last = std::max(last, has[rank]);
  }
  return last;
}

// A chain reduce of `bytes` in fragments: every fragment crosses ranks - 1 links, one
// fragment per step once the pipeline is full. The fragments are small enough to be sent
// eagerly, one after the other without waiting for the receiver: a message's latency is paid
// once per link, when the pipeline fills, not once per fragment.
double ChainReduce(double bytes, int ranks, const LinkCost& link) {
  const double fragments = std::ceil(bytes / kChainFragmentBytes);
  const double fragment = bytes / fragments;
  return (ranks - 1) * link.alpha + (fragments + ranks - 2) * fragment * (link.beta + link.gamma);
}

// Open MPI's rooted collectives on one piece, and the busiest link's (or reducing rank's)
// share of one piece, which sets the pace once several pieces are in flight.
struct PieceCost {
  double alone = 0;
  double pace = 0;
};

PieceCost OpenMpiRootedPiece(CollectiveKind kind, double bytes, int ranks, const LinkCost& link) {
  const int rounds = CeilLog2(ranks);
  const RootedAlgorithm algorithm = OpenMpiRootedAlgorithm(kind, bytes, ranks);
  if (kind == CollectiveKind::kReduce) {
    if (algorithm == RootedAlgorithm::kChain) {
      return {ChainReduce(bytes, ranks, link), bytes * (link.beta + link.gamma)};
    }
    return {BinomialReduce(bytes, ranks, link), rounds * bytes * (link.beta + link.gamma)};
  }
  LinkCost fanning_out = link;
  fanning_out.beta *= link.broadcast_factor;
  if (algorithm == RootedAlgorithm::kLinear) {
    const double pace = (ranks - 1) * bytes * fanning_out.beta;
    return {link.alpha + pace, pace};
  }
  return {BinomialBroadcast(bytes, ranks, fanning_out), rounds * bytes * fanning_out.beta};
}

// Open MPI's reduce and broadcast go out in pieces of kMpiRootedPieceBytes, all at once.
double RootedPieces(double bytes) {
  return std::max(1.0, std::ceil(bytes / static_cast<double>(kMpiRootedPieceBytes)));
}

// The value of a curve of (bytes, value) points at `bytes`: linear in log(bytes) between its
// points, the nearest point's beyond them.
template <typename Point>
double OnCurve(const std::vector<Point>& curve, double Point::*value, double bytes) {
  if (bytes <= curve.front().bytes) return curve.front().*value;
  if (bytes >= curve.back().bytes) return curve.back().*value;
  std::size_t upper = 1;
  while (curve[upper].bytes < bytes) ++upper;
  const Point& lo = curve[upper - 1];
  const Point& hi = curve[upper];
  const double t = std::log(bytes / lo.bytes) / std::log(hi.bytes / lo.bytes);
  return lo.*value + t * (hi.*value - lo.*value);
}

}  // namespace

RootedAlgorithm OpenMpiRootedAlgorithm(CollectiveKind kind, double piece_bytes, int ranks) {
  DOPPIO_ENSURE(kind != CollectiveKind::kAllreduce)
      << "an allreduce is not a rooted collective (MpiEngine runs it as a ring)";
  if (ranks > 4) return RootedAlgorithm::kBinomialTree;
  if (kind == CollectiveKind::kBroadcast) return RootedAlgorithm::kLinear;
  return piece_bytes >= kChainMinBytes ? RootedAlgorithm::kChain : RootedAlgorithm::kBinomialTree;
}

double RingAllreduceSeconds(double bytes, int ranks, const LinkCost& link) {
  if (ranks <= 1) return 0;
  const double share = bytes / ranks;
  return 2.0 * (ranks - 1) * (link.alpha + share * link.beta) + (ranks - 1) * share * link.gamma;
}

double CollectiveBytesSent(CollectiveKind kind, double bytes, int ranks) {
  DOPPIO_ENSURE(ranks >= 1) << "ranks must be at least 1, not " << ranks;
  const double others = ranks - 1;
  return kind == CollectiveKind::kAllreduce ? 2 * others * bytes : others * bytes;
}

double CpuCostPerByte(const LinkCost& link, double bytes) {
  if (link.cpu_curve.empty()) return link.cpu;
  return OnCurve(link.cpu_curve, &CpuCostPoint::cpu, bytes);
}

double BetaPerByte(const LinkCost& link, double bytes) {
  if (link.beta_curve.empty()) return link.beta;
  return OnCurve(link.beta_curve, &BetaPoint::beta, bytes);
}

double BusiestLinkBytes(CollectiveLibrary library, CollectiveKind kind, double bytes, int ranks) {
  DOPPIO_ENSURE(ranks >= 1) << "ranks must be at least 1, not " << ranks;
  if (ranks == 1) return 0;
  if (kind == CollectiveKind::kAllreduce) return 2.0 * (ranks - 1) / ranks * bytes;
  if (library == CollectiveLibrary::kNccl) return bytes;
  switch (OpenMpiRootedAlgorithm(kind, bytes / RootedPieces(bytes), ranks)) {
    case RootedAlgorithm::kChain:
      return bytes;
    case RootedAlgorithm::kLinear:
      return (ranks - 1) * bytes;
    case RootedAlgorithm::kBinomialTree:
      break;
  }
  return CeilLog2(ranks) * bytes;
}

double CollectiveSeconds(CollectiveLibrary library, CollectiveKind kind, double bytes, int ranks,
                         const LinkCost& link) {
  DOPPIO_ENSURE(ranks >= 1) << "ranks must be at least 1, not " << ranks;
  if (ranks == 1 || bytes <= 0) return 0;
  if (library == CollectiveLibrary::kNccl) {
    switch (kind) {
      case CollectiveKind::kAllreduce:
        return RingAllreduceSeconds(bytes, ranks, link);
      case CollectiveKind::kReduce:
        return (ranks - 1) * link.alpha + bytes * (link.beta + link.gamma);
      case CollectiveKind::kBroadcast:
        return (ranks - 1) * link.alpha + bytes * link.beta;
    }
  }
  // MpiCommunicator issues an allreduce as libnbc's ring (MpiEngine chooses it) in pieces of
  // kMpiAllreducePieceBytes, all at once. Each piece's round waits for its segment and sums
  // it; the pieces pipeline, the busiest link carrying 2(N-1)/N of each and each rank summing
  // (N-1)/N of it, which adds up to one ring over the whole buffer with alpha paid once per
  // round.
  if (kind == CollectiveKind::kAllreduce) return RingAllreduceSeconds(bytes, ranks, link);
  const double pieces = RootedPieces(bytes);
  const PieceCost piece = OpenMpiRootedPiece(kind, bytes / pieces, ranks, link);
  return piece.alone + (pieces - 1) * piece.pace;
}

CollectiveCost CollectiveCostOf(CollectiveLibrary library, CollectiveKind kind, double bytes,
                                int ranks, const LinkCost& link, double burst_bytes) {
  LinkCost at_size = link;
  at_size.beta = BetaPerByte(link, burst_bytes);
  CollectiveCost cost;
  cost.seconds = CollectiveSeconds(library, kind, bytes, ranks, at_size);
  cost.core_seconds = CollectiveBytesSent(kind, bytes, ranks) * CpuCostPerByte(link, bytes);
  return cost;
}

IterationProfile PlanIteration(const Net<float>& net, double bucket_mb) {
  IterationProfile profile;
  profile.forward.assign(net.layers().size(), 0.0);
  profile.backward.assign(net.layers().size(), 0.0);
  const std::vector<GradientBucket> buckets = GradientSync<float>::PlanBucketsForMb(net, bucket_mb);
  const std::vector<int> completing = GradientSync<float>::CompletingLayers(net, buckets);
  for (int b : GradientSync<float>::PlanLaunchOrder(net, buckets)) {
    ModelBucket bucket;
    bucket.gradient_bytes = static_cast<double>(buckets[b].count) * sizeof(float);
    bucket.wire_bytes = bucket.gradient_bytes;
    bucket.ready_layer = completing[b];
    profile.buckets.push_back(bucket);
  }
  if (!buckets.empty()) {
    // As GradientSync's blocking mode: the span from the first bucket to the end of the last.
    profile.blocking_bytes =
        static_cast<double>(buckets.back().offset + buckets.back().count - buckets.front().offset) *
        sizeof(float);
  }
  profile.weight_bytes = static_cast<double>(net.arena_count()) * sizeof(float);
  return profile;
}

IterationPrediction PredictIteration(const IterationProfile& profile, SyncMode mode, int ranks,
                                     CollectiveLibrary library, const LinkCost& link) {
  DOPPIO_ENSURE(ranks >= 1) << "ranks must be at least 1, not " << ranks;
  DOPPIO_ENSURE(profile.forward.size() == profile.backward.size())
      << "the profile has " << profile.forward.size() << " forward and " << profile.backward.size()
      << " backward times";
  const double forward = std::accumulate(profile.forward.begin(), profile.forward.end(), 0.0);
  const double backward = std::accumulate(profile.backward.begin(), profile.backward.end(), 0.0);
  IterationPrediction prediction;
  prediction.compute = forward + backward + profile.update;
  prediction.iteration = prediction.compute;
  if (ranks == 1 || profile.buckets.empty()) return prediction;

  // The bytes each kind of collective puts on the busiest link in the iteration, which set
  // the beta they all find there.
  double bucket_bytes = 0;
  for (const ModelBucket& bucket : profile.buckets) bucket_bytes += bucket.wire_bytes;
  const auto burst = [&](CollectiveKind kind) {
    const double iteration_bytes =
        kind == CollectiveKind::kBroadcast                                  ? profile.weight_bytes
        : kind == CollectiveKind::kAllreduce && mode == SyncMode::kBlocking ? profile.blocking_bytes
                                                                            : bucket_bytes;
    return BusiestLinkBytes(library, kind, iteration_bytes, ranks);
  };
  const auto cost = [&](CollectiveKind kind, double bytes) {
    return CollectiveCostOf(library, kind, bytes, ranks, link, burst(kind));
  };
  if (mode == SyncMode::kBlocking) {
    const CollectiveCost allreduce = cost(CollectiveKind::kAllreduce, profile.blocking_bytes);
    prediction.comm = allreduce.seconds;
    prediction.comm_cpu = allreduce.core_seconds;
    prediction.iteration = forward + backward + prediction.comm + profile.update;
  } else {
    // When backward has finished layer l: forward, then the backward of layers n-1 .. l.
    const int layers = static_cast<int>(profile.backward.size());
    std::vector<double> finished(layers + 1, forward);
    for (int l = layers - 1; l >= 0; --l) finished[l] = finished[l + 1] + profile.backward[l];
    const CollectiveKind kind =
        mode == SyncMode::kOverlap ? CollectiveKind::kAllreduce : CollectiveKind::kReduce;
    // Where every shared core runs a rank's compute, a collective that is in flight while
    // the ranks compute shares the cores with that compute: backward ends later by the
    // core-seconds of the part of the collective that overlaps it, spread over the cores, and
    // the collective, which gets the cores only half of that time, by as much. What runs
    // after backward has the cores to itself and takes its own time.
    const bool stretch = link.shared_cores > 0 && ranks >= link.shared_cores;
    double delay = 0;
    double stream_free = 0;
    for (const ModelBucket& bucket : profile.buckets) {
      DOPPIO_ENSURE(bucket.ready_layer >= 0 && bucket.ready_layer <= layers)
          << "a bucket is completed by layer " << bucket.ready_layer << " of " << layers;
      const double start = std::max(finished[bucket.ready_layer] + delay, stream_free);
      const CollectiveCost collective = cost(kind, bucket.wire_bytes);
      prediction.comm_cpu += collective.core_seconds;
      const double seconds = collective.seconds;
      const double compute_end = forward + backward + delay;
      double shared = 0;
      if (stretch && seconds > 0 && start < compute_end) {
        const double overlapped = std::min(1.0, (compute_end - start) / seconds);
        shared = overlapped * collective.core_seconds / link.shared_cores;
      }
      delay += shared;
      stream_free = start + seconds + shared;
      prediction.comm += seconds + shared;
    }
    prediction.iteration = std::max(forward + backward + delay, stream_free) + profile.update;
    if (mode == SyncMode::kReduceBroadcast) {
      const CollectiveCost broadcast = cost(CollectiveKind::kBroadcast, profile.weight_bytes);
      prediction.comm_cpu += broadcast.core_seconds;
      prediction.comm += broadcast.seconds;
      prediction.iteration += broadcast.seconds;
    }
  }
  if (link.shared_cores > 0) {
    const double cores = link.shared_cores;
    const double busy = std::min<double>(ranks, cores) * prediction.compute + prediction.comm_cpu;
    prediction.iteration = std::max(prediction.iteration, busy / cores);
  }
  prediction.exposed = prediction.iteration - prediction.compute;
  return prediction;
}

}  // namespace doppio
