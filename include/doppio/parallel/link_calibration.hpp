#pragma once

#include <vector>

#include "doppio/parallel/communicator.hpp"
#include "doppio/parallel/scaling_model.hpp"

namespace doppio {

// Measured alpha, beta and gamma between the ranks of a job, for `doppio scale --calibrate`.
struct CalibrationPoint {
  double bytes = 0;
  double seconds = 0;    // measured (ping-pong: one way, half the round trip)
  double predicted = 0;  // by the fitted LinkCost
};

// One allreduce of `bytes` in flight while every rank computes (a fixed spin standing in for
// backward): how much longer the spin took with it than without.
struct SpinPoint {
  double bytes = 0;            // the allreduce's buffer
  double spin_seconds = 0;     // the spin alone, every rank at once (the slowest)
  double stretch_seconds = 0;  // what the allreduce in flight added to it
  double bytes_sent = 0;       // the bytes all ranks sent in that allreduce
};

struct LinkCalibration {
  int ranks = 0;
  LinkCost link;
  std::vector<CalibrationPoint> ping_pong;  // between ranks 0 and 1
  std::vector<CalibrationPoint> allreduce;  // every rank, in place, as GradientSync issues it
  std::vector<CalibrationPoint> broadcast;  // from rank 0, as GradientSync sends the weights
  std::vector<SpinPoint> spins;             // by increasing size, the largest allreduce last
};

// Runs on every rank of `comm` (at least 2), collectively. Ping-pong between ranks 0 and 1
// (a gather to one of them, the other ranks contributing nothing) from 8 bytes to
// max_bytes: alpha is the fastest one-way time of the messages up to 16 KB, beta the
// least-squares slope of the larger ones above it, and link.beta_curve each message's own
// from 64 KB up ((time - alpha) / bytes). Then the allreduce sweep over all ranks:
// gamma (the cost of reducing a byte) is what the allreduce takes beyond the alpha-beta cost
// of the algorithm Open MPI runs, per byte reduced (the least-squares slope, which the
// largest sizes set). Then the broadcast sweep from rank 0: link.broadcast_factor is its
// time beyond alpha against the model's wire time at beta (the least-squares slope).
// Every point is the median of `repeats` runs (the slowest rank's time).
// Last, the cost of communication on shared cores, as a curve over the allreduce's size
// (every size of the sweep from 64 KB up): every rank spins for about three times that
// allreduce (at least 20 ms, and at least a second of spinning a point), alone and with one
// allreduce of that size in flight (alternately). A point's cost is the median stretch times
// `shared_cores`, per byte sent by all ranks (the stretch is that work spread over the cores;
// on ranks with cores of their own it is near 0): link.cpu_curve, and link.cpu the largest
// size's. link.shared_cores is set to `shared_cores`.
LinkCalibration CalibrateLink(Communicator* comm, double max_bytes, int repeats, int shared_cores);

// The fits CalibrateLink makes of its sweeps, as pure functions of the measured points.
// alpha: the fastest one-way time of the messages up to 16 KB (on a busy machine one of them
// can be slowed down many times); beta: the least-squares slope through the origin of the
// times beyond alpha of the messages from 1 KB; beta_curve: each message's own beta from
// 64 KB up ((time - alpha) / bytes, at least 0). Sets those three fields of *link.
void FitAlphaBeta(const std::vector<CalibrationPoint>& ping_pong, LinkCost* link);
// gamma: the allreduces' time beyond their alpha-beta cost (the algorithm Open MPI runs, at
// `link`'s flat alpha and beta), per byte reduced on the way: the least-squares slope through
// the origin, at least 0.
double FitGamma(const std::vector<CalibrationPoint>& allreduce, int ranks, const LinkCost& link);
// broadcast_factor: the broadcasts' time beyond alpha against the model's wire time at beta,
// the least-squares slope through the origin; 1 when the fit says nothing.
double FitBroadcastFactor(const std::vector<CalibrationPoint>& broadcast, int ranks,
                          const LinkCost& link);
// cpu_curve: each spin point's stretch spread over `shared_cores`, per byte all ranks sent.
std::vector<CpuCostPoint> FitCpuCurve(const std::vector<SpinPoint>& spins, int shared_cores);
// The model column beside the measured one: each point as `link` predicts it, with its
// curves (CollectiveCostOf; the ping-pong as one message at the beta of its size).
void PredictCalibrationPoints(LinkCalibration* calibration);

}  // namespace doppio
