#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "doppio/core/net.hpp"
#include "doppio/parallel/gradient_sync.hpp"

namespace doppio {

// The performance model behind `doppio scale`: one training iteration on N data-parallel
// ranks, replayed as a timeline of forward, backward (layer by layer) and one communication
// stream that carries GradientSync's buckets in its launch order, with alpha-beta costs of
// the collectives the communicator actually runs.

// What moving and reducing bytes between two ranks costs. A message of n bytes takes
// alpha + n * beta; every rank has its own full-duplex link, and the messages one rank sends
// at the same time share it. Summing a received buffer into one's own costs gamma per byte.
//
// Where the ranks share one machine's cores (a cluster of network namespaces, or ranks
// packed on a host whose network stack copies through the CPU), every byte sent also costs
// `cpu` seconds of one core (the sender's and the receiver's copies and the summing
// included), taken from the same `shared_cores` that run the ranks' compute: overlap cannot
// hide that work when every core is computing. shared_cores = 0: the ranks have cores (or a
// NIC) of their own for communication, and only the wire counts.
//
// Per byte, a small collective costs the cores more than a large one (waking the progress
// threads, the kernel's per-message work), so the CPU cost may be given as a curve over the
// collective's size: `cpu_curve`, measured by --calibrate at several sizes. Empty: `cpu` at
// every size.
struct CpuCostPoint {
  double bytes = 0;  // the collective's buffer
  double cpu = 0;    // core-seconds per byte sent at that size
};

// A link's rate may depend on how many bytes it carries at once, too: a shaped link lets a
// burst through faster than its rate after it has idled (a token bucket: Linux's tbf,
// a cloud instance's burst bandwidth), a TCP connection starts slowly after it has idled.
// `beta_curve` gives beta by the bytes one link carries in a row, as the ping-pong sweep
// measured it (one way, the link idle in that direction while the reply comes back). Empty:
// `beta` at every size.
struct BetaPoint {
  double bytes = 0;  // carried in a row on one link
  double beta = 0;   // seconds per byte at that size
};

struct LinkCost {
  double alpha = 0;         // seconds per message
  double beta = 0;          // seconds per byte on the wire
  double gamma = 0;         // seconds per byte reduced
  double cpu = 0;           // core-seconds per byte sent, all ranks' copying and summing
  double shared_cores = 0;  // the cores all ranks share; 0: none shared
  std::vector<CpuCostPoint> cpu_curve;  // by increasing bytes; empty: `cpu` everywhere
  std::vector<BetaPoint> beta_curve;    // by increasing bytes; empty: `beta` everywhere
  // A broadcast's cost per byte on the root's link, as a share of beta: the root sends to
  // several ranks at once, and where one flow cannot fill the link (a sender bound by its
  // CPU) several fill more of it. Measured by --calibrate's broadcast sweep; 1: as beta.
  double broadcast_factor = 1;
};

// Core-seconds per byte sent by a collective of `bytes`: link.cpu without a curve; else the
// curve's value, linear in log(bytes) between its points and the nearest point's beyond them.
double CpuCostPerByte(const LinkCost& link, double bytes);

// Seconds per byte on a link that carries `bytes` in a row: link.beta without a curve; else
// the curve's value, read as cpu_curve's.
double BetaPerByte(const LinkCost& link, double bytes);

// Whose collectives run, which decides the algorithms:
//   kOpenMpi: MpiCommunicator on Open MPI 4.1's non-blocking collectives (coll/libnbc). An
//             allreduce is libnbc's ring in 4 MB pieces issued at once, which pipeline; MpiEngine
//             selects the ring (src/parallel/mpi_engine.cpp;
//             libnbc's own choice for an in-place one is a binomial tree that moves the whole
//             buffer at every step): N segments, each of its 2(N-1) rounds sending one and
//             receiving one, the first N-1 then summing it. Reduce is a chain of 8 KB fragments
//             up to 4 ranks and a binomial tree beyond; broadcast is linear (the root sends to
//             every rank at once) up to 4 ranks and binomial beyond. Reduce and broadcast are
//             issued as pieces of kMpiRootedPieceBytes, all at once, which pipeline.
//   kNccl:    NcclCommunicator: ring allreduce; reduce and broadcast as pipelined chains.
enum class CollectiveLibrary { kOpenMpi, kNccl };
// Throws Error naming --collectives for an unknown name ("mpi" or "nccl").
CollectiveLibrary ParseCollectiveLibrary(const std::string& name);
const char* CollectiveLibraryName(CollectiveLibrary library);

enum class CollectiveKind { kAllreduce, kReduce, kBroadcast };

// How Open MPI's libnbc runs a rooted collective (a reduce or a broadcast) on one piece of
// `piece_bytes` on `ranks` ranks, decided here only: a chain reduce of 8 KB fragments up to 4
// ranks (from 64 KB; a smaller piece is reduced with a binomial tree even there), a linear
// broadcast (the root sends to every rank at once) up to 4 ranks, binomial trees beyond.
enum class RootedAlgorithm { kChain, kLinear, kBinomialTree };
RootedAlgorithm OpenMpiRootedAlgorithm(CollectiveKind kind, double piece_bytes, int ranks);

// Seconds one collective of `bytes` takes on `ranks` ranks, from its start on all ranks
// until the last rank has its result, at the link's flat alpha, beta and gamma (its curves
// are CollectiveCostOf's). 0 on one rank.
double CollectiveSeconds(CollectiveLibrary library, CollectiveKind kind, double bytes, int ranks,
                         const LinkCost& link);

// The bytes the busiest link carries in one collective of `bytes` on `ranks` ranks, in one
// direction: the ring allreduce 2(N-1)/N n on every link; a chain reduce or broadcast n; a
// linear broadcast (N-1) n out of the root, a binomial tree log2(N) n into or out of it
// (Open MPI's rooted collectives by OpenMpiRootedAlgorithm of their pieces).
double BusiestLinkBytes(CollectiveLibrary library, CollectiveKind kind, double bytes, int ranks);

// The bytes all `ranks` ranks send together in one collective of `bytes` (what the
// collective costs the shared cores): the ring allreduce 2(N-1) n, a reduce or a broadcast
// (N-1) n, whichever tree or chain carries them.
double CollectiveBytesSent(CollectiveKind kind, double bytes, int ranks);

// What one collective costs: the time it takes, and the core-seconds it takes from the cores
// the ranks share (0 without shared cores).
struct CollectiveCost {
  double seconds = 0;
  double core_seconds = 0;
};
// One collective of `bytes` with the link's curves applied, the one place that applies them:
// beta is the beta curve's at `burst_bytes`, the bytes the busiest link carries in a row (the
// collective's own BusiestLinkBytes when it runs alone; PredictIteration passes all of an
// iteration's collectives of that kind), and the CPU cost per byte sent the CPU curve's at the
// collective's size. `doppio scale` predicts with it, and --calibrate's model column is it.
CollectiveCost CollectiveCostOf(CollectiveLibrary library, CollectiveKind kind, double bytes,
                                int ranks, const LinkCost& link, double burst_bytes);

// The textbook costs the library's choices are made of (exposed for the tests and for
// comparison in the output).
// Ring allreduce: 2(N-1) steps of n/N bytes, (N-1) reductions of n/N.
double RingAllreduceSeconds(double bytes, int ranks, const LinkCost& link);

// One gradient bucket as the model sees it.
struct ModelBucket {
  double gradient_bytes = 0;  // its slice of the gradient arena
  // What goes on the wire: the gradient itself (float32) today; a compressed bucket
  // (fp16, top-k) plugs its own size in here.
  double wire_bytes = 0;
  int ready_layer = 0;  // the layer whose backward makes its last gradient final
};

// The compute side of one iteration on one rank and the communication it releases.
struct IterationProfile {
  std::vector<double> forward;       // seconds, by layer id
  std::vector<double> backward;      // seconds, by layer id (0 for layers without backward)
  double update = 0;                 // seconds: the solver's update after the gradients
  std::vector<ModelBucket> buckets;  // in GradientSync's launch order
  double blocking_bytes = 0;         // --sync=blocking: the one allreduce after backward
  double weight_bytes = 0;           // --sync=reduce_bcast: the weights broadcast after the update
};

// The buckets of `net` for --bucket_mb, as GradientSync plans them, in launch order.
IterationProfile PlanIteration(const Net<float>& net, double bucket_mb);

struct IterationPrediction {
  double iteration = 0;  // seconds per iteration
  double compute = 0;    // forward + backward + update
  double exposed = 0;    // iteration - compute: communication backward did not hide
  double comm = 0;       // seconds the communication stream was busy
  double comm_cpu = 0;   // core-seconds the communication took from the shared cores
};

// Replays one iteration: forward, then backward layer by layer from the last; a bucket is
// launched on the communication stream when backward has finished its ready_layer and the
// bucket before it in launch order is done (one stream: collectives run one at a time).
// overlap: allreduce per bucket; reduce_bcast: reduce per bucket, the update, then one
// broadcast of the weights; blocking: one allreduce of blocking_bytes after backward. The
// update starts when backward and the communication are both done. One rank communicates
// nothing.
// With a beta curve, every collective of one kind is charged the beta of all the bytes the
// iteration's collectives of that kind put on the busiest link: the link idles through
// forward (a token bucket refills, a TCP window restarts), and within backward a kind's
// collectives follow one another in one direction (the reduce towards the root, the
// broadcast out of it).
// With shared cores (link.shared_cores = P > 0) the iteration also takes at least what the
// cores must do: the compute of the ranks that run at once, min(N, P) x compute (the
// compute time is one rank's with all N running, so N > P ranks already share the P cores
// in it), plus comm_cpu (each collective's bytes sent at CpuCostPerByte of its size), spread
// over P cores; the prediction is the longer of the two. Where no core is spare (N >= P), a
// bucket's collective in flight while backward runs also delays backward by its core-seconds
// over P (the share of its time that overlaps backward): the collectives after backward,
// whose time is their own, stay exposed on top of that.
IterationPrediction PredictIteration(const IterationProfile& profile, SyncMode mode, int ranks,
                                     CollectiveLibrary library, const LinkCost& link);

}  // namespace doppio
