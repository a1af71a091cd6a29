#include "doppio/parallel/link_calibration.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "doppio/util/error.hpp"

namespace doppio {

namespace {

// The smallest allreduce whose CPU cost is measured: below it the stretch is lost in the
// spin's noise, and the model takes this size's cost.
constexpr double kMinCpuCurveBytes = 65536;
// The smallest message whose beta is measured: below it alpha hides the bytes.
constexpr double kMinBetaCurveBytes = 65536;
// A spin at least this long, and at least this many seconds of spinning per size.
constexpr double kMinSpinSeconds = 0.02;
constexpr double kSpinSecondsAPoint = 1.0;

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

// The slowest rank's time, on every rank.
double Slowest(Communicator* comm, double seconds) {
  comm->Allreduce(&seconds, 1, CommType::kDouble, ReduceOp::kMax, "calibration: slowest rank");
  return seconds;
}

// The median over `repeats` runs of `run`, the slowest rank's time of each, every run started
// together; one untimed run first sets up the connections and the buffers.
template <typename Run>
double MedianSlowest(Communicator* comm, int repeats, Run run) {
  std::vector<double> times;
  for (int repeat = -1; repeat < repeats; ++repeat) {
    comm->Barrier("calibration: start");
    const double start = CommClockSeconds();
    run();
    const double seconds = Slowest(comm, CommClockSeconds() - start);
    if (repeat >= 0) times.push_back(seconds);
  }
  return Median(times);
}

// One message of `bytes` from rank `from` to rank `to` (a gather in which only `from`
// contributes).
void Send(Communicator* comm, std::vector<char>* buffer, std::vector<char>* received,
          std::size_t bytes, int from, int to) {
  std::vector<std::size_t> counts(comm->size(), 0);
  counts[from] = bytes;
  const bool sends = comm->rank() == from;
  comm->IGatherv(buffer->data(), sends ? bytes : 0, received->data(), counts, to,
                 "calibration: ping-pong")
      ->Wait();
}

// Arithmetic that keeps one core busy and touches no memory beyond its own line (volatile:
// the compiler may not fold it), poking the communicator now and then as the trainer does
// between layers.
double Spin(Communicator* comm, long rounds) {
  constexpr long kPokeEvery = 20000;
  volatile double x = 1;
  for (long done = 0; done < rounds; done += kPokeEvery) {
    for (long i = 0; i < kPokeEvery; ++i) x = x * 0.999999 + 1e-6;
    comm->Poke();
  }
  return x;
}

// The least-squares slope through the origin of the points (x, y) added: sum(x y) / sum(x^2),
// 0 without points.
class SlopeThroughOrigin {
 public:
  void Add(double x, double y) {
    num_ += x * y;
    den_ += x * x;
  }
  double value() const { return den_ > 0 ? num_ / den_ : 0.0; }

 private:
  double num_ = 0;
  double den_ = 0;
};

std::vector<double> Sizes(double max_bytes) {
  std::vector<double> sizes = {8};
  for (double bytes = 1024; bytes <= max_bytes; bytes *= 4) sizes.push_back(bytes);
  return sizes;
}

// One-way times between ranks 0 and 1: half a round trip.
std::vector<CalibrationPoint> PingPongSweep(Communicator* comm, const std::vector<double>& sizes,
                                            int repeats) {
  std::vector<char> buffer(static_cast<std::size_t>(sizes.back()), 1);
  std::vector<char> received(buffer.size());
  std::vector<CalibrationPoint> points;
  for (double bytes : sizes) {
    const double round_trip = MedianSlowest(comm, repeats, [&] {
      Send(comm, &buffer, &received, static_cast<std::size_t>(bytes), 1, 0);
      Send(comm, &buffer, &received, static_cast<std::size_t>(bytes), 0, 1);
    });
    points.push_back({bytes, round_trip / 2, 0});
  }
  return points;
}

// Every rank's in-place allreduce, as GradientSync issues it, or rank 0's broadcast, as
// GradientSync sends the weights.
std::vector<CalibrationPoint> CollectiveSweep(Communicator* comm, CollectiveKind kind,
                                              const std::vector<double>& sizes, int repeats) {
  std::vector<float> gradients(static_cast<std::size_t>(sizes.back() / sizeof(float)), 1.f);
  std::vector<CalibrationPoint> points;
  for (double bytes : sizes) {
    const std::size_t count = std::max<std::size_t>(1, static_cast<std::size_t>(bytes) / 4);
    const double seconds = MedianSlowest(comm, repeats, [&] {
      if (kind == CollectiveKind::kAllreduce) {
        comm->Allreduce(gradients.data(), count, CommType::kFloat, ReduceOp::kSum,
                        "calibration: allreduce");
      } else {
        comm->IBroadcast(gradients.data(), count, CommType::kFloat, 0, MemoryKind::kHost,
                         "calibration: broadcast")
            ->Wait();
      }
    });
    points.push_back({count * 4.0, seconds, 0});
  }
  return points;
}

// The stretch of a spin by one allreduce of each size from 64 KB up (and the largest). The
// spin lasts about three of those allreduces, so that it ends while every rank still
// computes; every rank spins the same number of rounds.
std::vector<SpinPoint> SpinSweep(Communicator* comm, const std::vector<CalibrationPoint>& allreduce,
                                 int repeats) {
  std::vector<float> gradients(static_cast<std::size_t>(allreduce.back().bytes / sizeof(float)),
                               1.f);
  volatile double sink = 0;
  constexpr long kProbeRounds = 2000000;
  double start = CommClockSeconds();
  sink = sink + Spin(comm, kProbeRounds);
  const double probe = std::max(Slowest(comm, CommClockSeconds() - start), 1e-6);
  std::vector<SpinPoint> points;
  for (const CalibrationPoint& point : allreduce) {
    if (point.bytes < kMinCpuCurveBytes && point.bytes < allreduce.back().bytes) continue;
    const std::size_t count = static_cast<std::size_t>(point.bytes / sizeof(float));
    const double target = std::max(kMinSpinSeconds, 3 * point.seconds);
    const long rounds = static_cast<long>(kProbeRounds * target / probe);
    // Small sizes stretch the spin by little: more alternations keep the median steady.
    const int runs =
        std::max(repeats, static_cast<int>(std::ceil(kSpinSecondsAPoint / target / 2)));
    std::vector<double> alone, stretch;
    for (int run = -1; run < runs; ++run) {
      comm->Barrier("calibration: start");
      start = CommClockSeconds();
      sink = sink + Spin(comm, rounds);
      const double spin = Slowest(comm, CommClockSeconds() - start);
      comm->Barrier("calibration: start");
      start = CommClockSeconds();
      CommHandle handle =
          comm->IAllreduce(gradients.data(), count, CommType::kFloat, ReduceOp::kSum,
                           MemoryKind::kHost, "calibration: allreduce under a spin");
      sink = sink + Spin(comm, rounds);
      const double spun = Slowest(comm, CommClockSeconds() - start);
      handle->Wait();
      if (run >= 0) {
        alone.push_back(spin);
        stretch.push_back(spun - spin);
      }
    }
    SpinPoint spin;
    spin.bytes = point.bytes;
    spin.spin_seconds = Median(alone);
    spin.stretch_seconds = std::max(0.0, Median(stretch));
    spin.bytes_sent = CollectiveBytesSent(CollectiveKind::kAllreduce, point.bytes, comm->size());
    points.push_back(spin);
  }
  return points;
}

}  // namespace

LinkCalibration CalibrateLink(Communicator* comm, double max_bytes, int repeats, int shared_cores) {
  DOPPIO_ENSURE(comm->size() >= 2)
      << "--calibrate measures the links between ranks: run it under an MPI launcher with at "
         "least 2 ranks (mpirun -np 2 doppio scale --calibrate)";
  DOPPIO_ENSURE(max_bytes >= 1024) << "--calibrate_max_mb must be at least 1 KB";
  DOPPIO_ENSURE(repeats >= 1) << "--calibrate_repeats must be positive";
  LinkCalibration result;
  result.ranks = comm->size();
  const std::vector<double> sizes = Sizes(max_bytes);
  LinkCost& link = result.link;
  result.ping_pong = PingPongSweep(comm, sizes, repeats);
  FitAlphaBeta(result.ping_pong, &link);
  result.allreduce = CollectiveSweep(comm, CollectiveKind::kAllreduce, sizes, repeats);
  link.gamma = FitGamma(result.allreduce, result.ranks, link);
  result.broadcast = CollectiveSweep(comm, CollectiveKind::kBroadcast, sizes, repeats);
  link.broadcast_factor = FitBroadcastFactor(result.broadcast, result.ranks, link);
  result.spins = SpinSweep(comm, result.allreduce, repeats);
  link.cpu_curve = FitCpuCurve(result.spins, shared_cores);
  link.cpu = link.cpu_curve.back().cpu;
  link.shared_cores = shared_cores;
  PredictCalibrationPoints(&result);
  return result;
}

void FitAlphaBeta(const std::vector<CalibrationPoint>& ping_pong, LinkCost* link) {
  DOPPIO_ENSURE(!ping_pong.empty()) << "FitAlphaBeta: no ping-pong point";
  link->alpha = ping_pong.front().seconds;
  for (const auto& point : ping_pong) {
    if (point.bytes <= 16384) link->alpha = std::min(link->alpha, point.seconds);
  }
  SlopeThroughOrigin beta;
  for (const auto& point : ping_pong) {
    if (point.bytes >= 1024) beta.Add(point.bytes, point.seconds - link->alpha);
  }
  link->beta = std::max(0.0, beta.value());
  link->beta_curve.clear();
  for (const auto& point : ping_pong) {
    if (point.bytes < kMinBetaCurveBytes) continue;
    link->beta_curve.push_back(
        {point.bytes, std::max(0.0, point.seconds - link->alpha) / point.bytes});
  }
}

double FitGamma(const std::vector<CalibrationPoint>& allreduce, int ranks, const LinkCost& link) {
  LinkCost moving = link;
  moving.gamma = 0;
  LinkCost reduce_only;
  reduce_only.gamma = 1;
  SlopeThroughOrigin gamma;
  for (const auto& point : allreduce) {
    const auto seconds = [&](const LinkCost& cost) {
      return CollectiveSeconds(CollectiveLibrary::kOpenMpi, CollectiveKind::kAllreduce, point.bytes,
                               ranks, cost);
    };
    gamma.Add(seconds(reduce_only), point.seconds - seconds(moving));
  }
  return std::max(0.0, gamma.value());
}

double FitBroadcastFactor(const std::vector<CalibrationPoint>& broadcast, int ranks,
                          const LinkCost& link) {
  LinkCost latency_only, wire_only;
  latency_only.alpha = link.alpha;
  wire_only.beta = link.beta;
  SlopeThroughOrigin factor;
  for (const auto& point : broadcast) {
    const auto seconds = [&](const LinkCost& cost) {
      return CollectiveSeconds(CollectiveLibrary::kOpenMpi, CollectiveKind::kBroadcast, point.bytes,
                               ranks, cost);
    };
    factor.Add(seconds(wire_only), point.seconds - seconds(latency_only));
  }
  return factor.value() > 0 ? factor.value() : 1.0;
}

std::vector<CpuCostPoint> FitCpuCurve(const std::vector<SpinPoint>& spins, int shared_cores) {
  DOPPIO_ENSURE(!spins.empty()) << "FitCpuCurve: no spin point";
  std::vector<CpuCostPoint> curve;
  for (const SpinPoint& spin : spins) {
    DOPPIO_ENSURE(spin.bytes_sent > 0) << "FitCpuCurve: a spin point sent no bytes";
    curve.push_back({spin.bytes, spin.stretch_seconds * shared_cores / spin.bytes_sent});
  }
  return curve;
}

void PredictCalibrationPoints(LinkCalibration* calibration) {
  const LinkCost& link = calibration->link;
  for (auto& point : calibration->ping_pong) {
    point.predicted = link.alpha + point.bytes * BetaPerByte(link, point.bytes);
  }
  const auto predict = [&](CollectiveKind kind, std::vector<CalibrationPoint>* points) {
    for (auto& point : *points) {
      const double burst =
          BusiestLinkBytes(CollectiveLibrary::kOpenMpi, kind, point.bytes, calibration->ranks);
      point.predicted = CollectiveCostOf(CollectiveLibrary::kOpenMpi, kind, point.bytes,
                                         calibration->ranks, link, burst)
                            .seconds;
    }
  };
  predict(CollectiveKind::kBroadcast, &calibration->broadcast);
  predict(CollectiveKind::kAllreduce, &calibration->allreduce);
}

}  // namespace doppio
